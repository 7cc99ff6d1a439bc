"""Layer 3 of memory: the one recall, which ranks every layer's candidates for a query and shows them."""
