"""Streamlit helpers of the dashboard: session state, cached fits and shared widgets.

Pages import from here; :mod:`perfmodel` itself never imports streamlit.
"""
