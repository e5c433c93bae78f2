import json
import subprocess
import sys

import pytest

from rigbook.errors import EndpointError
from rigbook.openai.smoke import smoke
from tests.conftest import free_port
from tests.launch.stub_http import json_body, serve


def rigbook(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rigbook", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.e2e
def test_smoke_gets_a_reply_from_the_real_llama_cpp_server(llama_server):
    url, model_id = llama_server
    result = smoke(url)
    assert result.model == model_id and model_id in result.served
    assert result.reply and result.seconds > 0
    done = rigbook("smoke", url, "--model", model_id, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reply"]


@pytest.mark.e2e
def test_smoke_names_the_served_models_when_the_id_is_wrong(llama_server):
    url, model_id = llama_server
    with pytest.raises(EndpointError) as caught:
        smoke(url, "glm-5.3-flash")
    assert caught.value.code == "E_MODEL_ID" and model_id in caught.value.message
    done = rigbook("smoke", url, "--model", "glm-5.3-flash")
    assert done.returncode == 2 and "error[E_MODEL_ID]" in done.stderr and model_id in done.stderr
    assert "Traceback" not in done.stderr


def test_smoke_reports_a_refused_connection():
    done = rigbook("smoke", f"http://127.0.0.1:{free_port()}", "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"] == "E_CONNECT"


def _models(request):
    return 200, {"Content-Type": "application/json"}, json_body({"data": [{"id": "m"}]})


def test_smoke_reports_http_errors_with_status_and_body():
    def handle(request):
        if request.path == "/v1/models":
            return _models(request)
        return 503, {}, b"engine is warming up"

    with serve(handle) as url, pytest.raises(EndpointError) as caught:
        smoke(url)
    assert caught.value.code == "E_HTTP"
    assert "503" in caught.value.message and "warming up" in caught.value.message


def test_smoke_refuses_an_empty_reply():
    def handle(request):
        if request.path == "/v1/models":
            return _models(request)
        return (
            200,
            {},
            json_body({"choices": [{"message": {"role": "assistant", "content": "  "}}]}),
        )

    with serve(handle) as url, pytest.raises(EndpointError) as caught:
        smoke(url + "/v1")
    assert caught.value.code == "E_EMPTY_REPLY"
