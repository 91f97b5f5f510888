"""Services: governance (the only writer of note values), the write pipeline, search."""
