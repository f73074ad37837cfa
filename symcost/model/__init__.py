"""A model assembled from components: layer groups, the parallel layout notation, elementwise work."""
