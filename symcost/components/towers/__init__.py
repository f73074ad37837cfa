"""Encoders beside the text stack (vision and audio towers, their projectors): components like the others, in a folder of their own so the text mechanisms read apart."""
