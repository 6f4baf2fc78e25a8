"""question"""
