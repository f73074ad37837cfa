"""The commands, one module per kind: ``model`` (models, params, flops, cache), ``serve`` (memory,
roofline, deploy, gpus), ``train`` (train, comm, budget, presets), ``symbolic`` (check, export, scale,
crossover), ``documents`` (sheet, plot).

Each module lists the options of its commands (``OPTIONS``: rows of ``symcost.cli.options``) and holds
one ``cmd_<name>(args, out)`` per command: it parses, makes one library call and prints through
``out`` (``symcost.cli.output.Output``). ``symcost.cli.main`` imports only the module of the command run;
a library only one command of a module uses, and that takes milliseconds to import, is imported by that
command (``# lazy:``), so the others start as fast as before.
"""
