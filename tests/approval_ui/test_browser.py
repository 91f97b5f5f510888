"""End to end in a real browser: `amem ui` serves the console, a reviewer signs in with a
password and approves a proposal, and the ledger records it. Debian's chromium, driven headless
by Playwright; a screenshot of the result lands in test-artifacts/."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from amem.domain.models import ProposalStatus
from amem.memory import Memory
from approval_ui.auth import COOKIE_NAME
from tests.approval_ui.conftest import PASSWORD, REPO
from tests.factories import llm_proposer, make_note, said, signed_in

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium: apt-get install -y chromium"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, deadline_s: float = 60) -> None:
    """Poll Streamlit's health endpoint until it answers (the server takes about a second)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"amem ui exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.1)  # polling a condition, not a guess at how long it takes
    raise AssertionError(f"the console did not answer {url} in {deadline_s} s:\n{log.read_text()}")


@pytest.fixture
def console_extra_env() -> dict[str, str]:
    return {}


@pytest.fixture
def console_url(
    console_env: dict[str, str], console_extra_env: dict[str, str], tmp_path: Path
) -> Iterator[str]:
    """`amem ui` on a free loopback port, with the store given as CLI options."""
    port = _free_port()
    log = tmp_path / "console.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AMEM_")} | console_extra_env
    cmd = [
        sys.executable,
        "-c",
        "import sys; from amem.cli import main; sys.exit(main())",
        "--home",
        console_env["AMEM_HOME"],
        "--database-url",
        console_env["AMEM_DATABASE_URL"],
        "--policy",
        console_env["AMEM_POLICY"],
        "ui",
        "--port",
        str(port),
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        _wait_healthy(f"http://127.0.0.1:{port}/_stcore/health", proc, log)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _click_until(
    button: Locator, shown: Locator, attempts: int = 3, before: Callable[[], None] | None = None
) -> None:
    """Click `button` until `shown` is visible, at most `attempts` times; `before` runs before each
    click (filling a form).

    The console draws streamlit-authenticator's cookie component beside the sign-in form, and
    after a sign-in with AMEM_UI_COOKIE_KEY a second one that writes the cookie. Each one's first
    report from the browser reruns the page, and a click that lands while that rerun starts can
    be dropped (seen in CI on a loaded machine, and here once in eight runs beside three busy
    loops: the page stayed as it was, with no error). A person would click again, and so does
    this, only while the button is still there; a click that never works still fails here.
    """
    from playwright.sync_api import expect

    for attempt in range(1, attempts + 1):
        if before is not None:
            before()
        button.click()
        try:
            expect(shown).to_be_visible(timeout=15_000 if attempt < attempts else 30_000)
            return
        except AssertionError:
            if attempt == attempts or not button.is_visible():
                raise


def _sign_in(page: Page, signed_in: Locator) -> None:
    """Sign alice in through the password form and wait for `signed_in` to show."""

    def fill() -> None:
        page.get_by_role("textbox", name="Reviewer").fill("alice")
        page.get_by_role("textbox", name="Password").fill(PASSWORD)

    _click_until(page.get_by_role("button", name="Sign in"), signed_in, before=fill)


BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.mark.parametrize("console_extra_env", [{"AMEM_UI_COOKIE_KEY": "tests-only-cookie-signing-key-0123"}])
def test_a_reviewer_signs_in_and_approves_in_a_browser(mem: Memory, console_url: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    note = make_note(mem, "Call with Acme: SSO via Okta is mandatory <script>alert(1)</script>")
    p = mem.propose(
        note.id,
        "decision_rationale",
        "Okta, because Acme's IT mandates it",
        reason="stated by the CTO",
        proposer=llm_proposer(mem),
        raw_log_ids=note.raw_log_ids,
    )
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1100})
            page = context.new_page()
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(console_url)
            _sign_in(page, page.get_by_role("heading", name="Review queue"))
            card_text = page.get_by_text("stated by the CTO")
            expect(card_text).to_be_visible(timeout=30_000)
            page.locator(f".st-key-comment_{note.raw_log_ids[0]} input").fill("matches the call notes")
            _click_until(
                page.locator(f".st-key-approve_{p.id} button"),
                page.get_by_text("Nothing waiting for review here."),
            )
            # said from the ledger, so it holds even if the browser's session restarted meanwhile
            # (the page's own "Approved: ..." message lives in the session, and went with it once)
            last = f"Your last decision: approved decision_rationale of {note.id} (acme)"
            approved = page.get_by_text(last)
            expect(approved).to_be_visible(timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "console-approved.png"), full_page=True)
            assert dialogs == []  # the note's <script> never ran
            # a signed cookie brings her back without the password, until she signs out
            again = context.new_page()
            again.goto(console_url)
            expect(again.get_by_role("heading", name="Review queue")).to_be_visible(timeout=30_000)
            _click_until(
                again.get_by_role("button", name="Sign out"), again.get_by_role("textbox", name="Password")
            )
            # the signed-out page deletes the cookie from a browser component, after that rerun
            again.wait_for_function(f"() => !document.cookie.includes('{COOKIE_NAME}=')", timeout=30_000)
            after = context.new_page()
            after.goto(console_url)
            expect(after.get_by_role("textbox", name="Password")).to_be_visible(timeout=30_000)
        finally:
            browser.close()
    decided = mem.proposal(p.id)
    assert decided.status == ProposalStatus.APPROVED
    assert decided.reviewer == "alice" and decided.review_comment == "matches the call notes"


@pytest.mark.parametrize("console_extra_env", [{"AMEM_UI_TRUSTED_HEADER": "X-Forwarded-User"}])
def test_behind_a_proxy_the_header_names_the_reviewer(mem: Memory, console_url: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    note = make_note(mem, "Globex renewal")
    p = mem.propose(note.id, "deleted", True, reason="duplicate", proposer=llm_proposer(mem))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            # what the proxy adds to every request, the websocket's included
            context = browser.new_context(extra_http_headers={"X-Forwarded-User": "bob"})
            page = context.new_page()
            page.goto(console_url)
            expect(page.get_by_role("heading", name="Review queue")).to_be_visible(timeout=30_000)
            expect(page.get_by_text("Bob Chen")).to_be_visible(timeout=30_000)
            expect(page.get_by_role("textbox", name="Password")).to_have_count(0)
            page.locator(f".st-key-approve_{p.id} button").click()
            expect(page.get_by_text("Refused by the policy").first).to_be_visible(timeout=30_000)
            stranger = browser.new_page()  # no header: no identity, no console
            stranger.goto(console_url)
            expect(stranger.get_by_text("No reviewer identity")).to_be_visible(timeout=30_000)
            expect(stranger.get_by_role("heading", name="Review queue")).to_have_count(0)
        finally:
            browser.close()
    assert mem.proposal(p.id).status == ProposalStatus.PENDING


def test_the_first_items_buttons_are_visible_without_scrolling_at_1440x900(
    mem: Memory, console_url: str
) -> None:
    from playwright.sync_api import expect, sync_playwright

    old = said(mem, "Acme pays $42 per seat on the Pro plan", at=datetime(2026, 1, 10, 9, 0, tzinfo=UTC))
    call = (
        "Call with Acme's procurement lead: they renew for two years at $49 per seat because the "
        "migration to our EU region removed their data-residency blocker. Next step: send the order "
        "form by Friday."
    )
    new = said(mem, call, at=datetime(2026, 8, 20, 14, 30, tzinfo=UTC))
    values = []
    for attribute, value, evidence in (
        (
            "decision_rationale",
            "the migration to our EU region removed their data-residency blocker",
            "because the migration to our EU region removed their data-residency blocker",
        ),
        ("next_step", "send the order form by Friday", "Next step: send the order form by Friday"),
    ):
        held_value = mem.propose(
            new.id,
            attribute,
            value,
            reason="stated in the call",
            proposer=llm_proposer(mem),
            raw_log_ids=new.raw_log_ids,
            evidence=evidence,
        )
        values.append(held_value)
    mem.propose(
        old.id,
        "invalid_at",
        "2026-08-20T00:00:00Z",
        reason="a newer price per seat",
        proposer=llm_proposer(mem),
        raw_log_ids=new.raw_log_ids,
        evidence="$49 per seat",
    )
    other = said(mem, "Globex wants a pilot for the support team", scope="globex")
    mem.propose(
        other.id,
        "next_step",
        "plan the pilot",
        reason="r",
        proposer=llm_proposer(mem),
        raw_log_ids=other.raw_log_ids,
    )
    # alice decided before: her "Your last decision" line is on the page too, above the queue
    earlier = said(mem, "Initech asked for SSO", scope="initech")
    held = mem.propose(earlier.id, "next_step", "book the SSO demo", reason="r", proposer=llm_proposer(mem))
    mem.approve(held.id, reviewer=signed_in(mem, "alice"))
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(console_url)
            first = page.locator(f".st-key-approve_item_{new.raw_log_ids[0]} button")
            _sign_in(page, first)
            expect(page.get_by_text("Older fact", exact=True)).to_be_visible(timeout=30_000)
            expect(page.get_by_text(f"Your last decision: approved next_step of {earlier.id}")).to_be_visible(
                timeout=30_000
            )
            expect(page.get_by_text("send the order form by Friday", exact=True)).to_be_visible(
                timeout=30_000
            )  # the proposed value, drawn
            page.screenshot(path=str(ARTIFACTS / "review-queue-1440x900.png"))
            box = first.bounding_box()
            reject = page.locator(f".st-key-reject_item_{new.raw_log_ids[0]} button").bounding_box()
            assert box is not None and reject is not None
            for b in (box, reject):  # inside the window as it opens: no scrolling needed
                assert b["x"] >= 0 and b["x"] + b["width"] <= 1440
                assert b["y"] >= 0 and b["y"] + b["height"] <= 900
            assert page.evaluate("window.scrollY") == 0
            for key in (f"approve_{values[0].id}", f"reject_{values[0].id}"):  # a value's own buttons
                label = page.locator(f".st-key-{key} button")
                cut = "b => [...b.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1)"
                assert not label.evaluate(cut), f"{key}: its label is cut at 1440 px"
            expect(page.get_by_role("button", name="Correct")).to_have_count(4)  # one a held value
            page.locator(".st-key-approve_all button").click()
            expect(page.get_by_text("Approve all 2 matching items (4 held values)")).to_be_visible(
                timeout=30_000
            )
            page.locator(".st-key-confirm_all button").click()
            expect(page.get_by_text("Nothing waiting for review here.")).to_be_visible(timeout=30_000)
            page.get_by_role("link", name="Account facts").click()
            expect(page.get_by_role("heading", name="Account facts")).to_be_visible(timeout=30_000)
            expect(page.get_by_text(call)).to_be_visible(timeout=30_000)
            expect(page.get_by_text("$42 per seat")).to_have_count(0)  # retired by the newer price
            page.screenshot(path=str(ARTIFACTS / "account-facts-1440x900.png"))
        finally:
            browser.close()
    assert mem.count_review_items().items == 0
    assert mem.read(new.id).extra["next_step"] == "send the order form by Friday"


#: Every page of the console's navigation, by its link's name.
PAGES = ("Review queue", "Note explorer", "Account facts", "Audit log", "Policy", "Your tokens")
#: The labels of the page's buttons that their button cuts (Streamlit ends them with "…").
CUT_LABELS = """() => [...document.querySelectorAll('button')]
    .filter(b => [b, ...b.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1))
    .map(b => b.innerText.replace(/\\s+/g, ' ').trim())"""


def test_no_page_cuts_a_buttons_label_on_a_1280_px_laptop(mem: Memory, console_url: str) -> None:
    """A lead on a 1280 px laptop read "Approve…" and "Reject it…" on every item: equal columns gave
    each button a quarter of the row whatever its label."""
    from playwright.sync_api import expect, sync_playwright

    for n in range(12):  # enough items for a two-digit "Approve all 12 matching"
        note = said(mem, f"Globex wants a pilot for team {n}", scope="globex")
        mem.propose(
            note.id,
            "next_step",
            f"plan pilot {n}",
            reason="r",
            proposer=llm_proposer(mem),
            raw_log_ids=note.raw_log_ids,
        )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(console_url)
            _sign_in(page, page.get_by_role("button", name="Approve item").first)
            cut: dict[str, list[str]] = {}
            for name in PAGES:
                page.get_by_role("link", name=name).click()
                expect(page.get_by_role("heading", name=name)).to_be_visible(timeout=30_000)
                expect(page.get_by_role("button").first).to_be_visible(timeout=30_000)
                if labels := page.evaluate(CUT_LABELS):
                    cut[name] = labels
            page.get_by_role("link", name="Review queue").click()
            expect(page.get_by_role("button", name="Correct")).to_have_count(10)  # drawn, one a value
            expect(page.get_by_role("button", name="Approve all 12 matching")).to_be_visible()
            cut_queue = page.evaluate(CUT_LABELS)
        finally:
            browser.close()
    assert not cut and not cut_queue, f"labels cut at 1280 px: {cut or cut_queue}"


def test_a_reviewer_decides_the_top_item_from_the_keyboard(mem: Memory, console_url: str) -> None:
    """A approves the item on top and X rejects it (with the comment typed for it), so the next one
    comes up; typing those letters into a comment box decides nothing."""
    from playwright.sync_api import expect, sync_playwright

    held = []
    for n, text in enumerate(("Globex wants a pilot", "Globex asked for SSO", "Globex wants a discount")):
        note = said(mem, text, scope="globex", at=datetime(2026, 8, 1 + n, 9, 0, tzinfo=UTC))
        held.append(
            mem.propose(
                note.id,
                "next_step",
                f"step {n}",
                reason="r",
                proposer=llm_proposer(mem),
                raw_log_ids=note.raw_log_ids,
            )
        )
    first, second, third = held
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(console_url)
            _sign_in(page, page.locator(f".st-key-approve_item_{first.raw_log_ids[0]} button"))
            waiting = page.get_by_text("Waiting for these filters: 3 items")
            expect(waiting).to_be_visible(timeout=30_000)
            box = page.locator(f".st-key-comment_{first.raw_log_ids[0]} input")
            box.press_sequentially("a wax")  # key by key, as a reviewer types
            page.get_by_role("heading", name="Review queue").click()  # the comment is entered
            expect(waiting).to_be_visible()  # typed, not decided
            page.keyboard.press("a")
            expect(page.get_by_text("Waiting for these filters: 2 items")).to_be_visible(timeout=30_000)
            page.locator(f".st-key-comment_{second.raw_log_ids[0]} input").fill("not what they said")
            page.get_by_role("heading", name="Review queue").click()
            page.keyboard.press("x")
            expect(page.get_by_text("Waiting for these filters: 1 item (")).to_be_visible(timeout=30_000)
        finally:
            browser.close()
    approved, rejected = mem.proposal(first.id), mem.proposal(second.id)
    assert (approved.status, approved.reviewer, approved.review_comment) == (
        ProposalStatus.APPROVED,
        "alice",
        "a wax",
    )
    assert (rejected.status, rejected.review_comment) == (ProposalStatus.REJECTED, "not what they said")
    assert mem.proposal(third.id).status == ProposalStatus.PENDING


def test_a_reload_keeps_the_reviewer_signed_in_and_a_forged_cookie_does_not(
    mem: Memory, console_url: str
) -> None:
    """With no AMEM_UI_COOKIE_KEY set, a reload or a new tab keeps alice signed in: the cookie is
    signed with a secret the console's process made and keeps in memory. A cookie for alice signed
    with any other secret (what someone without that memory could make) gets the password form."""
    import jwt
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            page = context.new_page()
            page.goto(console_url)
            _sign_in(page, page.get_by_role("heading", name="Review queue"))
            page.wait_for_function(f"() => document.cookie.includes('{COOKIE_NAME}=')", timeout=30_000)
            page.reload()
            expect(page.get_by_role("heading", name="Review queue")).to_be_visible(timeout=30_000)
            expect(page.get_by_text("alice · cs_lead")).to_be_visible(timeout=30_000)

            forged = browser.new_context(viewport={"width": 1440, "height": 900})
            token = jwt.encode(
                {"username": "alice", "exp_date": datetime.now().timestamp() + 3600},
                "a secret the console never made, long enough for HS256",
                algorithm="HS256",
            )
            forged.add_cookies([{"name": COOKIE_NAME, "value": token, "url": console_url}])
            other = forged.new_page()
            other.goto(console_url)
            expect(other.get_by_role("textbox", name="Password")).to_be_visible(timeout=30_000)
            expect(other.get_by_role("heading", name="Review queue")).to_have_count(0)
        finally:
            browser.close()


def test_a_link_to_a_note_opens_it_after_the_sign_in(mem: Memory, console_url: str) -> None:
    """A lead sends a note's link in a chat; whoever follows it signs in and lands on that note,
    not on the review queue."""
    from playwright.sync_api import expect, sync_playwright

    note = said(mem, "Globex renewed for two years because the EU region shipped", scope="globex")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(f"{console_url}note_explorer?note={note.id}")
            _sign_in(page, page.get_by_role("heading", name="Note explorer"))
            expect(page.get_by_text(f"{note.id}", exact=True)).to_be_visible(timeout=30_000)
            assert page.url.endswith(f"/note_explorer?note={note.id}")
        finally:
            browser.close()
