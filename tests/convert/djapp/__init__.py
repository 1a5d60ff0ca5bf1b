"""A throwaway app of legacy models keyed by AutoField/BigAutoField, converted by migrations.

``migrations`` converts in place (ConvertToKSortedId); ``online_migrations`` takes the online
path. Tests pick one with MIGRATION_MODULES.
"""
