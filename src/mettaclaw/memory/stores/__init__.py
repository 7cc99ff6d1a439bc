"""Layer 1 of memory: where vectors, words and files are kept, behind small Protocols.

vectors (the VectorStore Protocol and an in-memory store), chroma (ChromaDB, embedded or a server),
buffered (a write journal in front of a vector store), keyed_vectors (vectors on disk by key),
lexical (BM25), embedders (hash, local model, OpenAI), cache (the embedding cache), lock (the folder
lock). Imports only core/ and errors.
"""
