"""The rule table: code -> rule. One module per rule beside this file."""
