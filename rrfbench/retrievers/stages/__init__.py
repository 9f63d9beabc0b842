"""Steps after retrieval: reranking a fused run (``rerank``) and fail-open fallbacks when a
stream fails (``failopen``).

May import: what ``rrfbench.retrievers`` may, and its retrievers.
"""
