"""The file tools' specs: ``read_file``, ``list_dir``, ``grep_files``, ``view_image``."""

from __future__ import annotations

from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.spec import FunctionSpec, JsonSchema, ToolSpec, boolean, number, obj, string

READ_FILE_DESCRIPTION = (
    "Show lines of a local text file, each prefixed with its 1-based line number "
    "(`L<n>: `). In the default slice mode you get `limit` lines starting at `offset`; "
    "indentation mode instead returns the code block around an anchor line, widening "
    "to enclosing blocks as configured."
)
LIST_DIR_DESCRIPTION = (
    "List what a local folder contains, recursing a few levels. Output starts with the "
    "folder's absolute path, then one entry per line, indented two spaces per level; "
    "folders end in `/`, symbolic links in `@`, other special files in `?`. Use `offset` "
    "and `limit` to page through long listings."
)
GREP_FILES_DESCRIPTION = (
    "Search file contents with a regular expression (ripgrep syntax) and get back the "
    "paths of the files that contain a match, most recently modified first."
)
VIEW_IMAGE_DESCRIPTION = (
    "Look at an image file on this machine: it is attached to the conversation so you can "
    "see it. Use it when you need to inspect a picture that exists on disk."
)


def _read_file_parameters() -> JsonSchema:
    indentation = obj(
        {
            "anchor_line": number("Line to build the block around; `offset` when omitted."),
            "max_levels": number(
                "Number of enclosing (less indented) levels to include; 0 means no limit."
            ),
            "include_siblings": boolean(
                "Also return neighbouring blocks indented like the anchor's block."
            ),
            "include_header": boolean(
                "Keep comment lines (doc comments, attributes) right above the block."
            ),
            "max_lines": number("Upper bound on the lines returned in indentation mode."),
        }
    )
    return obj(
        {
            "file_path": string("Absolute path of the file to read."),
            "offset": number("1-based number of the first line to return (at least 1)."),
            "limit": number("Largest number of lines to return."),
            "mode": string(
                'Either "slice" (a plain line range, the default) or "indentation" '
                "(the block around an anchor line)."
            ),
            "indentation": indentation,
        },
        ["file_path"],
    )


def read_file_spec(config: ToolsConfig) -> ToolSpec:
    return FunctionSpec("read_file", READ_FILE_DESCRIPTION, _read_file_parameters())


def list_dir_spec(config: ToolsConfig) -> ToolSpec:
    params = obj(
        {
            "dir_path": string("Absolute path of the folder to list."),
            "offset": number("1-based number of the first entry to show (at least 1)."),
            "limit": number("Largest number of entries to show."),
            "depth": number("How many levels to descend; 1 lists only direct children."),
        },
        ["dir_path"],
    )
    return FunctionSpec("list_dir", LIST_DIR_DESCRIPTION, params)


def grep_files_spec(config: ToolsConfig) -> ToolSpec:
    params = obj(
        {
            "pattern": string("Regular expression to look for in file contents."),
            "include": string(
                'Glob restricting which files are searched, such as "*.py" or "*.{js,jsx}".'
            ),
            "path": string(
                "File or folder to search; relative paths start at the working directory, "
                "which is also the default."
            ),
            "limit": number("Largest number of paths to return (100 when omitted)."),
        },
        ["pattern"],
    )
    return FunctionSpec("grep_files", GREP_FILES_DESCRIPTION, params)


def view_image_spec(config: ToolsConfig) -> ToolSpec:
    path = string("Path of the image file on the local filesystem.")
    return FunctionSpec("view_image", VIEW_IMAGE_DESCRIPTION, obj({"path": path}, ["path"]))
