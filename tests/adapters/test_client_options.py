"""``ClientOptions.keywords`` hands every option on: what an adapter passes to
``open_client`` makes the same options again."""

from sansio_mcp.runtime._client_options import ClientOptions, SessionOptions


def test_keywords_carry_every_option() -> None:
    options = ClientOptions(
        client_info={"name": "probe", "version": "1"},
        protocol_version="2025-06-18",
        mode="handshake",
        supported_versions=("2025-06-18",),
        initialize_timeout=3.0,
        max_input_rounds=2,
        max_message_size=1234,
        trace=print,
    )
    keywords = options.keywords()
    assert set(keywords) == set(SessionOptions.__annotations__)
    assert ClientOptions.of(keywords) == options
