"""relevance"""
