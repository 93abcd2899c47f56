"""memwrap's integrations with agent frameworks, one module each; each needs its framework (a pip extra)."""


def needs(module: str, package: str, extra: str) -> str:
    """The one-line message of an integration imported without its framework: what to install."""
    return (
        f"memwrap.integrations.{module} needs {package}, which is not installed: "
        f"pip install 'memwrap[{extra}]' (or pip install {package})"
    )
