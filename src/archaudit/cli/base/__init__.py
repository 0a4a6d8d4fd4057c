"""What every command module builds on: the typer app, the option rule (option classes
become flags) and the console tables. Imports nothing of the command modules."""
