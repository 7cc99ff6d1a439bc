"""Layer 2 of memory: the memory index, every remembered text and episode as one row, found by words,
by meaning and by its sentences (longterm), with its filters, row format, sentence vectors, snapshot
and the knowledge priors it indexes. Imports only stores/ and core/; independent of semantic/.
"""
