"""Facts about the Jupyter server that started this process, for every front end."""
