"""Stored memories read and removed one by one: list, get, delete, a bank's list of banks (catalog.py). Above
recall (its filters) and webhooks (a delete is announced), below learning (forgetting deletes through it)."""
