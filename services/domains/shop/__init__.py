"""Shafabakhsh's product page: five services and a gateway that merges their answers."""
