"""services/domains"""
