"""The only door to Jupyter: the magics (:mod:`.magics`, loaded by :mod:`.extension`),
the cell's widgets (:mod:`.ui`) and the tools that need a live kernel (:mod:`.kernel`).
Nothing outside this package imports IPython, ipykernel or ipywidgets
(``tests/project/test_layering.py`` checks)."""
