"""Who decides whether a call runs: the session's approval store (:mod:`.store`), the
pure decision of whether a call needs a person (:mod:`.requirement`), files that would
shadow a module the kernel imports (:mod:`.shadowing`), and the fixed sequence every
guarded call goes through (:mod:`.orchestrator`)."""
