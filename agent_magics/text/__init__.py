"""Text rules every layer shares, pure functions of strings: what a person sees is what
runs (:mod:`.visible`), text that cannot drive a terminal (:mod:`.inert`), Markdown that
holds any text (:mod:`.markdown`), and the text rules Codex inherits from Rust
(:mod:`.rust`)."""
