"""The ground floor: notation, terms, primitives, conventions, units, errors, parsing, LaTeX, numeric compilation. Imports nothing else of symcost."""
