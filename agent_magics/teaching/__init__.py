"""A teacher's policy: read from notebooks and site files, combined, and held to.

Pure data and rules (no Jupyter): the front ends read the policy where they run and
hold their sessions to it (:class:`.guard.PolicyGuard`).
"""
