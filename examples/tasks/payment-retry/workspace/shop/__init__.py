"""Kettle & Crumb web shop: checkout, payments and the nightly payment jobs."""
