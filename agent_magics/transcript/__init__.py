"""A turn as a person reads it: one model and the renderers that draw it.

:mod:`.model` folds a session's events into blocks; :mod:`.saved` reads a saved
session's lines back into the same shape. The cards' HTML (:mod:`.html`,
:mod:`.card_text`), the static transcript (:mod:`.static_html`, :mod:`.markdown`), the
exports (:mod:`.export_md`, :mod:`.export_html`, :mod:`.ipynb`), ``%agent history``
(:mod:`.history`) and the terminal's lines (:mod:`.terminal`) are pure functions of
it. Nothing here imports Jupyter: the widgets only place these strings.
"""
