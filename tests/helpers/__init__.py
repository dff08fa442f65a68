"""What the tests share and are not tests: real kernels, loopback model and fault servers,
the browser, the sandbox arena, the conformance harness's glue, the repository's paths."""
