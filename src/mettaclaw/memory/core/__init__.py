"""Layer 0 of memory: the vocabulary every other layer shares and nothing of its own to store.

text (the one tokenizer and sentence rule), tags and scopes (whose a record is), times (the one time
model), settings (every recall knob), ranking (rank fusion and spreading activation), layers (the
capture/delete announcements), gc. Imports nothing else of memory.
"""
