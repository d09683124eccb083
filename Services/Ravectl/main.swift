// ravectl: the Rave command-line tool.
print("usage: ravectl <command> [options]")
