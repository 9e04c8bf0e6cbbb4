pytest_plugins = ["tests.standin.pytest_plugin"]
