"""One module per family of checks; each function takes a CheckContext and returns findings."""
