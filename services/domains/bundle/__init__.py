"""The data bundle: four data-only services (person, animal, car, building), each reading
its own table of two CHAR(6) columns. Only the data (``data.py``) exists so far; the
services and the gateway's merge come with the stacks that use them."""
