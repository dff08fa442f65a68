"""The Lark grammar Codex sends as the ``format`` of the freeform ``apply_patch`` tool.

It only constrains the model's sampling; :mod:`.parser` accepts more than this grammar
(zero hunks, Add File without ``+`` lines, padded markers, a heredoc wrapper).
"""

from __future__ import annotations

__all__ = ["LARK_GRAMMAR"]

LARK_GRAMMAR = """start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

hunk: add_hunk | delete_hunk | update_hunk
add_hunk: "*** Add File: " filename LF add_line+
delete_hunk: "*** Delete File: " filename LF
update_hunk: "*** Update File: " filename LF change_move? change?

filename: /(.+)/
add_line: "+" /(.*)/ LF -> line

change_move: "*** Move to: " filename LF
change: (change_context | change_line)+ eof_line?
change_context: ("@@" | "@@ " /(.+)/) LF
change_line: ("+" | "-" | " ") /(.*)/ LF
eof_line: "*** End of File" LF

%import common.LF
"""
