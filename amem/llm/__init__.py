"""The analyst: turns a raw log into note attributes, links and neighbour updates.

One module per task (prompt, version and answer model together): construct_note, link_evolve.
Two implementations of the same protocol: LiteLLMAnalyst (any litellm model string) and
OfflineAnalyst (deterministic, local, the default with no model configured).
"""
