"""Documents made from the formulas: derivation sheets, the seeds audit, plots, templates."""
