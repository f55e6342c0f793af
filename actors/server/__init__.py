"""The server assembled: its process settings (``settings``) and its composition from every
package (``compose``); ``run.py`` is the process around them."""
