"""What the model reads about each built-in tool: names, descriptions, parameter schemas.

Each handler's ``spec`` returns the one written here for its tool.
"""
