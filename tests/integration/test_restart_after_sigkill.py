"""SIGKILL the connector after a run of payments; on the same data directory every earlier
answer comes back byte for byte, and nothing is authorized again (G2, G4)."""
from conftest import assert_same_answers_one_charge, pay_and_settle


def test_answers_survive_sigkill(connector_factory, stub_server):
    connector = connector_factory(acquirer=stub_server.url)
    answers = pay_and_settle(connector, "crash", 20)
    connector.process.kill()
    connector.start()
    assert_same_answers_one_charge(connector, answers, stub_server, "crash", 20)
