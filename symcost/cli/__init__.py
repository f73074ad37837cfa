"""The ``symcost`` command line (contract: shared INTERFACE.md). ``python -m symcost`` is the same.

Every command takes ``--json`` and then prints one JSON object. Bad input exits with status 2 and
one line on stderr (plus ``{"error": ...}`` on stdout with ``--json``), never a traceback.

    main.py       the entry points (``main(argv) -> int``, ``run()``) and the parser, built from
    options.py    the table of every option (flags, type and range, default, help, example, group)
    output.py     tables, the JSON answer, the warnings of one call
    commands/     the commands (model, serve, train, symbolic, documents): parse, call the library, print
"""
from .main import COMMANDS, EXAMPLES, build_parser, main, run
from .options import parse_size

__all__ = ["main", "run", "build_parser", "EXAMPLES", "COMMANDS", "parse_size"]
