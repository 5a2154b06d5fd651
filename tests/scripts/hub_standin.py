"""A local stand-in for the Hugging Face Hub HTTP API: just the endpoints ``HfApi.create_repo`` and
``HfApi.upload_folder`` call on the git-LFS path (``HF_HUB_DISABLE_XET=1``), so the real upload code of
huggingface_hub runs against it with ``HF_ENDPOINT`` pointing here.

Endpoints, as the Hub serves them:
* ``POST /api/repos/create`` -> the repo URL (409, with the URL, if it exists).
* ``POST /api/validate-yaml`` (upload_folder sends README.md first) -> 400 with ``errors`` unless the YAML block
  is a mapping whose ``model-index`` parses and whose ``license``/``library_name`` are strings and ``tags`` a list;
  a warning when there is no metadata.
* ``POST /api/models/{repo}/preupload/{revision}`` -> an upload mode per file: "lfs" for binary files (a NUL byte in
  the 512-byte sample, like safetensors) and files over 10 MB, else "regular".
* ``POST /{repo}.git/info/lfs/objects/batch`` (git-LFS batch API, basic transfer) -> an upload action per object
  not yet stored; ``PUT /lfs/{oid}`` stores the bytes after checking their sha256.
* ``POST /api/models/{repo}/commit/{revision}`` (ndjson: header, file, lfsFile, deletedFile) -> writes the files
  of the new commit; an ``lfsFile`` must point at an uploaded object.

Every request is recorded in ``requests`` (method, path), the files of each repo in ``repos[repo_id]``.
"""

import base64
import hashlib
import json
import re
import threading

import yaml
from huggingface_hub.repocard_data import model_index_to_eval_results
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LFS_THRESHOLD = 10 * 1024 * 1024


class HubStandIn:
    def __init__(self):
        self.repos: dict[str, dict[str, bytes]] = {}
        self.lfs_objects: dict[str, bytes] = {}
        self.requests: list[tuple[str, str]] = []
        self.tokens: list[str | None] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def _reply(self, status: int, body=None):
                data = json.dumps(body if body is not None else {}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length", 0)))

            def _route(self, method: str):
                path = self.path.split("?", 1)[0]
                hub.requests.append((method, path))
                hub.tokens.append(self.headers.get("Authorization"))
                body = self._body()
                routes = [
                    ("POST", r"/api/repos/create", hub._create_repo),
                    ("POST", r"/api/validate-yaml", hub._validate_yaml),
                    ("POST", r"/api/models/(?P<repo>[^/]+/[^/]+)/preupload/(?P<rev>[^/]+)", hub._preupload),
                    ("POST", r"/(?P<repo>[^/]+/[^/]+)\.git/info/lfs/objects/batch", hub._lfs_batch),
                    ("PUT", r"/lfs/(?P<oid>[0-9a-f]{64})", hub._lfs_put),
                    ("POST", r"/api/models/(?P<repo>[^/]+/[^/]+)/commit/(?P<rev>[^/]+)", hub._commit),
                ]
                for route_method, pattern, handler in routes:
                    match = re.fullmatch(pattern, path)
                    if route_method == method and match:
                        self._reply(*handler(body, **match.groupdict()))
                        return
                self._reply(404, {"error": f"The stand-in does not serve {method} {path}"})

            def do_POST(self):
                self._route("POST")

            def do_PUT(self):
                self._route("PUT")

            def do_GET(self):
                self._route("GET")

        return Handler

    def _create_repo(self, body: bytes):
        payload = json.loads(body)
        repo_id = f"{payload['organization']}/{payload['name']}" if payload.get("organization") else payload["name"]
        url = f"{self.endpoint}/{repo_id}"
        if repo_id in self.repos:  # the Hub's 409 also carries the URL, which create_repo(exist_ok=True) returns
            return 409, {"error": "You already created this model repo", "url": url}
        self.repos[repo_id] = {}
        return 200, {"url": url, "name": repo_id, "id": repo_id}

    def _validate_yaml(self, body: bytes):
        content = json.loads(body)["content"]
        match = re.match(r"^---\n(.*?)\n---\n", content, re.S)
        if not match:
            return 200, {"warnings": [{"message": "empty or missing yaml metadata in repo card"}]}
        errors = []
        try:
            metadata = yaml.safe_load(match.group(1))
        except yaml.YAMLError as error:
            return 400, {"errors": [{"message": f"YAML does not parse: {error}"}]}
        if not isinstance(metadata, dict):
            return 400, {"errors": [{"message": "the metadata must be a mapping"}]}
        for key in ("license", "library_name", "pipeline_tag"):
            if key in metadata and not isinstance(metadata[key], str):
                errors.append({"message": f'"{key}" must be a string'})
        if "tags" in metadata and not (isinstance(metadata["tags"], list)
                                       and all(isinstance(tag, str) for tag in metadata["tags"])):
            errors.append({"message": '"tags" must be an array of strings'})
        if "model-index" in metadata:
            try:
                model_index_to_eval_results(metadata["model-index"])
            except (KeyError, TypeError, AttributeError) as error:
                errors.append({"message": f'"model-index" is invalid: {error!r}'})
        return (400, {"errors": errors}) if errors else (200, {})

    def _missing(self, repo: str):
        return (404, {"error": f"Repository {repo} not found"}) if repo not in self.repos else None

    def _preupload(self, body: bytes, repo: str, rev: str):
        if error := self._missing(repo):
            return error
        files = []
        for file in json.loads(body)["files"]:
            binary = b"\x00" in base64.b64decode(file["sample"])
            mode = "lfs" if binary or file["size"] > LFS_THRESHOLD else "regular"
            files.append({"path": file["path"], "uploadMode": mode, "shouldIgnore": False, "oid": None})
        return 200, {"files": files, "commitOid": "0" * 40}

    def _lfs_batch(self, body: bytes, repo: str):
        if error := self._missing(repo):
            return error
        payload = json.loads(body)
        if payload.get("operation") != "upload" or "basic" not in payload.get("transfers", ["basic"]):
            return 422, {"message": "only basic uploads are served"}
        objects = []
        for obj in payload["objects"]:
            entry = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            if obj["oid"] not in self.lfs_objects:
                entry["actions"] = {"upload": {"href": f"{self.endpoint}/lfs/{obj['oid']}"}}
            objects.append(entry)
        return 200, {"transfer": "basic", "objects": objects}

    def _lfs_put(self, body: bytes, oid: str):
        if hashlib.sha256(body).hexdigest() != oid:
            return 400, {"error": "sha256 mismatch"}
        self.lfs_objects[oid] = body
        return 200, {}

    def _commit(self, body: bytes, repo: str, rev: str):
        if error := self._missing(repo):
            return error
        files = dict(self.repos[repo])
        header = None
        for line in body.decode().splitlines():
            item = json.loads(line)
            key, value = item["key"], item["value"]
            if key == "header":
                header = value
            elif key == "file":
                files[value["path"]] = base64.b64decode(value["content"])
            elif key == "lfsFile":
                if value["oid"] not in self.lfs_objects:
                    return 400, {"error": f"LFS object {value['oid']} of {value['path']} was never uploaded"}
                files[value["path"]] = self.lfs_objects[value["oid"]]
            elif key == "deletedFile":
                files.pop(value["path"], None)
            else:
                return 400, {"error": f"unknown commit operation {key!r}"}
        if header is None or not header.get("summary"):
            return 400, {"error": "a commit needs a header with a summary"}
        self.repos[repo] = files
        oid = hashlib.sha1(body).hexdigest()
        return 200, {"commitUrl": f"{self.endpoint}/{repo}/commit/{oid}", "commitOid": oid, "success": True,
                     "pullRequestUrl": None}
