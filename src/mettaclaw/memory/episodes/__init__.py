"""Layer 2b of memory: the episodic trace (trace, records), the episodes it gives the memory index
(index), delivery keys of turns sent again (delivery) and the statistics of how actions ended.
Imports index/, stores/ and core/.
"""
