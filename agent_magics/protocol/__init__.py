"""The data that crosses layers: Responses API items kept in history and read from the
stream (:mod:`.items`), and what every layer says about approvals (:mod:`.approval`).
Import from the modules: this package imports nothing, so the approval types cost
``%load_ext`` no pydantic."""
