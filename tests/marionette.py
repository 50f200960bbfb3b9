"""A minimal client of Firefox's Marionette protocol (the remote-control protocol built into
Firefox, the one geckodriver speaks), enough to load pages headless and read their DOM back:
messages are `LENGTH:JSON`, commands `[0, id, name, params]`, replies `[1, id, error, result]`.
Used by html_browser_test.py --browser firefox; no package beyond Firefox itself."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time


class Firefox:
    def __init__(self, binary, width=1400, height=1000):
        self.profile = tempfile.mkdtemp(prefix="opscope-firefox-")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        with open(os.path.join(self.profile, "user.js"), "w") as f:
            for k, v in {"marionette.port": self.port, "devtools.console.stdout.content": True,
                         "browser.shell.checkDefaultBrowser": False, "datareporting.policy.dataSubmissionEnabled": False,
                         "toolkit.telemetry.reportingpolicy.firstRun": False, "browser.startup.homepage_override.mstone": "ignore",
                         "app.update.disabledForTesting": True}.items():
                f.write(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n")
        self.log = open(os.path.join(self.profile, "console.log"), "w+")
        self.proc = subprocess.Popen([binary, "--headless", "--marionette", "--no-remote", "--profile", self.profile,
                                      "--width", str(width), "--height", str(height), "about:blank"],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, MOZ_HEADLESS="1"))
        self.sock, self.next_id = None, 1
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=60)
                break
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"firefox exited with {self.proc.returncode}: {self.console()[-800:]}")
                time.sleep(0.2)
        if not self.sock:
            raise RuntimeError("firefox: Marionette did not listen within 60 s")
        self.buf = b""
        self._read()  # the server's hello
        self.command("WebDriver:NewSession", {"capabilities": {"alwaysMatch": {"pageLoadStrategy": "normal"}}})

    def _read(self):
        while b":" not in self.buf:
            self.buf += self._recv()
        n, rest = self.buf.split(b":", 1)
        n = int(n)
        while len(rest) < n:
            rest += self._recv()
        msg, self.buf = rest[:n], rest[n:]
        return json.loads(msg)

    def _recv(self):
        data = self.sock.recv(1 << 20)
        if not data:
            raise RuntimeError("firefox closed the Marionette connection: " + self.console()[-800:])
        return data

    def command(self, name, params=None):
        msg_id = self.next_id
        self.next_id += 1
        body = json.dumps([0, msg_id, name, params or {}]).encode()
        self.sock.sendall(str(len(body)).encode() + b":" + body)
        while True:
            reply = self._read()
            if reply[0] == 1 and reply[1] == msg_id:
                break
        if reply[2]:
            raise RuntimeError(f"{name}: {reply[2].get('error')}: {reply[2].get('message')}")
        return reply[3]

    def dom(self, url):
        """Loads `url` (waiting for its load event) and returns the serialized DOM."""
        # From a blank page, so that the same file with another fragment is loaded anew rather
        # than scrolled to.
        self.command("WebDriver:Navigate", {"url": "about:blank"})
        self.command("WebDriver:Navigate", {"url": url})
        # Navigate can return before the page has loaded (a page that changes its own fragment
        # while loading ends the wait early): wait until the document is that file (any fragment)
        # and complete.
        deadline = time.monotonic() + 60
        state = None
        while time.monotonic() < deadline:
            state = self.command("WebDriver:ExecuteScript", {
                "script": "return [document.location.href, document.readyState];", "args": []})["value"]
            if state and state[0].split("#")[0] == url.split("#")[0] and state[1] == "complete":
                return self.command("WebDriver:GetPageSource")["value"]
            time.sleep(0.1)
        raise RuntimeError(f"firefox: {url} did not finish loading within 60 s (at {state})")

    def console(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def close(self):
        try:
            if self.sock:
                self.command("Marionette:Quit", {"flags": ["eForceQuit"]})
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)
