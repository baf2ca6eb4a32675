"""Jobs: admission, arrays, dependencies, updates, deciding job requests,
prolog/epilog reports and retention of ended jobs.
"""
