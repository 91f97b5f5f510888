"""The derived vector index (Chroma) and the embedders behind it."""
