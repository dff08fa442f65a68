"""The Jupyter front end: transcript state, pure renderers, widgets, approvers, headless
and terminal runs. Only this package and :mod:`agent_magics.magics` import IPython or
ipywidgets; the core stays plain async Python."""
