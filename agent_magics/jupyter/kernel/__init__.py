"""The tools that need a live kernel: run code in the person's namespace, look at its
variables, see the notebook around the cell, and the person's own Python functions as
tools. The front end (:mod:`agent_magics.jupyter.magics`) adds them to a session through
:class:`~agent_magics.jupyter.kernel.tools.KernelTools`. This layer may import IPython."""
