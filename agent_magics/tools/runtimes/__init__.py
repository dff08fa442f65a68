"""The runtimes: what one kind of action does between a handler and the processes.

A handler parses a call's arguments and builds a request; the runtime for its kind of
action owns the rest and is what :func:`agent_magics.tools.approval.orchestrator.run_guarded`
drives (its :class:`~agent_magics.tools.approval.orchestrator.Guarded` interface): the approval
request and key, the policy's requirement, the attempt under a sandbox, and the one
sandbox-denial check. The process manager below (:mod:`agent_magics.tools.unified_exec`) only
runs processes and knows nothing of approvals.

* :mod:`.command_args` — the arguments every command tool shares (escalation, the
  check of command text);
* :mod:`.shell` — a shell command: what every command call shares, and the one-shot
  run of ``shell`` / ``shell_command``;
* :mod:`.unified_exec` — ``exec_command``'s command, kept alive in a session;
* :mod:`.apply_patch` — a patch, applied in-process (the tool, or found in a command).
"""
