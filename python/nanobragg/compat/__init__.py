"""Compatibility layers for code written against other nanoBragg front ends."""
