"""Decisions and the reason given for them: the rationale is the reason span only.

A sentence states a decision when it has a finite decision verb ("chose", "renewed", "will not
renew", "no longer wants", "postponed"...). Its reason is found by clause structure, worded many
ways: after a connective that follows the decision ("because", "since", "as", "due to", "so",
"after" + clause, a colon), before it ("Because of X, they ...", "X, so they ..."), or in the next
or previous sentence ("Reason: ...", "The reason is ...", "... so X. We agreed."). "since" and
"as" count only when a clause follows ("since the upgrade" is a time, "as of" a date). The span
is the reason alone, without its connective; no decision or no reason gives none. What a system
takes in or turns away ("212 rows rejected", "14 EDAs accepted") and a job someone accepts are
no decision.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from amem.llm.offline.dates import ERRANDS
from amem.llm.offline.text import Sentence

DECISION = re.compile(
    # "switched on / off" a setting is a toggle, not a choice
    r"\b(?:decided|chose|chosen|opted|agreed|renewed|signed(?! up)|switched(?! on\b| off\b)|moved|"
    r"postponed|settled|re-?planned|rescheduled|re-?priced|"
    # "moves from 01.06. to ...": a date's dots are no sentence's end
    r"mov(?:es|ing) from(?= (?:[^.;]|\.(?!\s+(?-i:[A-Z]))){1,30}? to\b)|"
    r"pulled the plug|called off|backed out|no-go|said (?:no|yes) to|"
    # a counter-offer refused: "We said no since $30 is below our floor", "Told him no - ..."
    r"(?:said|told (?:him|her|them|[A-Z][a-z]+)) no\b(?!\s+(?:to|one|more|longer|later|decision)\b)|"
    r"turned (?:it |that |this |them )?down|"
    # a verdict opening a clause: "Yes to the 3% cap; no to net-45, as finance won't extend terms"
    r"(?:^|(?<=[.;:,]\s))(?:yes|no) to(?=\s+(?:the\s+|a\s+|an\s+)?[\w$€£])|(?:is|are|'s|'re) off the table|"
    # a line labelled as the decision ("- Decision: Victor is bringing the CS team onto Coach")
    r"(?<!no )decisions?(?=\s*:\s)|change of plans?\b|"
    r"(?:is|are|'re|am)\s+(?:not\s+)?(?:pushing|moving|switching|dropping|postponing|cancell?ing|delaying|"
    r"extending|upgrading|downgrading|renewing|going with|opting|reducing|pausing|keeping|scrapping|"
    r"starting (?:with|w(?=/))|"
    r"shelving|"
    # "we're (not) rolling Coach out to the CS team": a rollout decided, or called off
    r"rolling (?:[\w-]+\s+){0,4}?out|going ahead)|"
    r"(?:moves?|switch(?:es)?)(?: up| back)? to|"
    r"(?:doesn'?t|does not|don'?t|do not) want|"
    r"cancell?ed|declined|rejected|approved|picked(?! up\b)|selected|went with|going with|"
    r"went w(?=/\s)|going w(?=/\s)|"  # "went w/ Ohio first"
    # a plan given up: "dropped the Lisbon expansion", "shelved the rollout" (not "dropped the news")
    r"dropped (?:the|their|our|its|plans?)\b(?! (?:news|ball|call|line|note|hint)\b)|"
    r"(?:scrapped|shelved|abandoned|paused)(?= (?:the|their|our|its|plans?|[A-Z])\b)|"
    # a decision taken back: "we've reversed the self-hosted plan", "changed our minds on the add-on"
    r"reverses (?:the|our|their|its|this|that) decision|"
    r"reversed(?= (?:the|their|our|its|this|that|plans?|course|[A-Z]|"
    r"(?:him|her|my|them|our)sel(?:f|ves))\b|\s*:)|"
    r"chang(?:ed|ing) (?:our|their|his|her|my) minds?|(?:did|made|do|make) an? u-turn|"
    # a formal resolution ("the partners have resolved that ..."), a sign-off in short ("Raj OK'd"),
    # a person's own call named ("Dana's call, as finance gets 6% off")
    r"resolved (?:that|to)|ok(?:'|a)?y?'?d|okayed|"
    r"(?-i:(?!(?:Today|Yesterday|Tomorrow|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)'s)"
    r"[A-Z][a-z]+)'s (?:call|decision)(?=\s*[,;:.])|"
    r"extended|upgraded|downgraded|accepted|committed|pushed(?! back on)|delayed|reduced|decided against|"
    r"(?:will|would|shall)\s+(?:not|no longer)\s+\w+|won'?t\s+\w+|"
    r"(?:will|'ll)\s+roll (?:[\w-]+\s+){0,4}?out\b|"
    r"(?:will|'ll)\s+(?:reduce|renew|switch|move|cancel|upgrade|downgrade|drop|pause|extend|sign|"
    r"go with|stick with|keep|stay|expand|add|buy|commit)|"
    r"no longer (?:wants?|needs?|plans?|uses?|going|interested)|not to \w+|"
    r"stick(?:ing)? with|(?:is|are) moving to|opt(?:ing)? (?:for|out)|chooses|opts|"
    r"(?:the )?decision (?:is|was) to|reinstat\w*|discontinu\w*|terminated|withdr[ea]w\w*|revert\w*|"
    r"(?:is|are|'re|am)\s+(?:reinstating|terminating)|go(?:ing)? ahead|went ahead|proceed(?:ing|ed)?|"
    r"rather than|landed (?:at|on)|"
    # a decision to wait ("We'll hold off on the inventory module until 2027"), a choice in the
    # present ("we choose yearly billing in advance")
    r"hold(?:ing)? off on|(?:will|'ll)\s+hold off|(?:we|I|they)\s+(?:choose|pick)\b|"
    # a note-taker's shorthand: "pushing westerville's sessions to mon 3/30"
    r"(?:^|(?<=[.;]\s))pushing (?:[\w'-]+\s+){1,4}?to\b|"
    # declining an offer ("we'll pass on Learning for now") and a change stated as a necessity
    # ("we need to move the go-live from May 4 to May 11")
    r"(?:will|'ll|are|'re|am|is)\s+pass(?:ing)? on|passed on|(?:are|'re|am|is)\s+going to pass\b|"
    # an offer taken ("we'll take the $58 on annual prepaid", "We'll take the early renewal")
    r"(?:will|'ll)\s+take\s+(?:the|your)\b(?!\s+(?:time|lead|call|minutes|notes?|liberty|opportunity|"
    r"chance|weekend|day|rest)\b)|"
    r"(?:(?:need|have) to|must) (?:move|push|postpone|delay|cancel|drop|pause|reschedule)|"
    # "dropped the add-on", not "dropped in / by" (a visit) nor "dropped the news" (told it)
    r"dropped(?!\s+(?:in|by|off|out|over|round|a line|a note|the news|a hint|us|me)\b)|paused)\b",
    re.IGNORECASE,
)
#: Words before a decision verb in its clause that make it a wish, a plan, an option or a question
#: rather than a decision taken ("would like to move", "might switch", "whether to renew").
_NOT_TAKEN_BEFORE = re.compile(
    r"\b(?:would like to|'d like to|wants? to|wish(?:es)? to|hopes? to|hoping to|plans? to|planning to|"
    r"considering|thinking (?:about|of)|might|may|could|should|whether to|if|unless|once|"
    # a requirement stated ("we need annual invoicing in NOK rather than quarterly")
    # (in its own clause: "They need SSO, so they went with Enterprise" decides)
    r"(?:we|they|I|you|he|she)\s+(?:still\s+|really\s+|would\s+)?(?:need|needs|require|requires)\b"
    r"(?!\s+to\b)(?=[^.;:!?,]{0,60}$)|"
    r"not yet|not|never|asked (?:us |me |them )?(?:to|whether|if)|asks? (?:us |me |them )?to|to decide|"
    # a negated auxiliary: "hasn't approved", "haven't decided", "didn't agree"
    r"(?:has|have|had|did|does|do|is|are|was|were)n['’]t)\b"
    r"[^.;:!?]{0,40}$",
    re.IGNORECASE,
)
#: After the decision verb: it was not taken after all ("- nothing decided", "not committed").
_NOT_TAKEN_AFTER = re.compile(
    r"^[^.;!?]{0,80}\b(?:nothing (?:is |was )?decided|not (?:yet )?(?:committed|decided|final))", re.I
)
_NEGATED_DECISION = re.compile(r"\b(?:not to|against)\b", re.IGNORECASE)
#: Before "rejected" / "accepted": what a system takes in or turns away ("212 rows rejected with
#: ...", "export declarations rejected", "14 EDAs accepted", "all accepted", "comes back
#: rejected"): a system's outcome, not a person's decision.
_SYSTEM_OUTCOME = re.compile(
    r"(?:\b(?:rows?|records?|files?|imports?|uploads?|declarations?|submissions?|filings?|entries|"
    r"transactions?|messages?|e-?mails?|logins?|tokens?|certificates?|confirmations?|all|back)|"
    r"\b[A-Z]{2,}s)\s+(?:(?:were|was|are|is|get|got|being|been)\s+)?$"
)
#: After "accepted": a job taken, the speaker's own move ("I've accepted a role elsewhere").
_JOB_TAKEN = re.compile(r"^\s+(?:a|an|the)\s+(?:new\s+)?(?:role|position|job)\b", re.IGNORECASE)


#: After "agreed": an errand someone takes on ("that we send all three by Friday", ": Kofi sends the
#: deck", "with Deepa: her team to install it"): the next step agreed, not a decision.
_AGREED_ERRAND = re.compile(
    r"^\s*(?:(?:up)?on\s+)?(?:with\s+[^:;.]{1,40}?)?\s*(?:that\s+|:\s*|,\s*)"
    r"(?:we|I|they|you|[A-Z][a-z]+|(?:his|her|their|our|my|the) [a-z]+)\s+"
    rf"(?:(?:to|will|'ll|shall|would)\s+)?(?:{ERRANDS})(?:s|es)?\b"
)


def decided(sentence: str) -> re.Match[str] | None:
    """The first decision verb of the sentence that states a decision taken, or None: a question,
    and a verb governed by a wish, a plan, a condition or a negation, are no decision."""
    return next(taken_decisions(sentence), None)


def taken_decisions(sentence: str) -> Iterator[re.Match[str]]:
    """Every decision verb of the sentence that states a decision taken (``decided``'s test)."""
    if sentence.rstrip().endswith("?"):
        return
    for match in DECISION.finditer(sentence):
        before = sentence[: match.start()]
        clause = re.split(r"[.;:!?]\s|,\s+(?:and|but|so)\s", before)[-1]
        if _NOT_TAKEN_BEFORE.search(clause) and not _NEGATED_DECISION.search(match.group(0)):
            continue
        if _NOT_TAKEN_AFTER.search(sentence[match.end() :]):
            continue
        verb = match.group(0).lower()
        if verb in {"rejected", "accepted"} and _SYSTEM_OUTCOME.search(before):
            continue
        if verb == "accepted" and _JOB_TAKEN.match(sentence[match.end() :]):
            continue
        if verb == "agreed" and _AGREED_ERRAND.match(sentence[match.end() :]):
            continue  # "Agreed that we send the pack by Friday": an errand agreed, a next step
        yield match


#: A finite verb: what makes the words after a connective a clause rather than a time or a name.
_FINITE = re.compile(
    r"\b(?:is|are|was|were|has|have|had|does|did|do|can|could|will|would|must|should|may|might|"
    r"need|needs|want|wants|makes|make|fits|fit|removes|requires|require|prefers|lacks|costs|"
    r"matches|lines up|means|gives|takes|runs|keeps|stays|remains|helps|covers|saves|allows|got|"
    # irregular past forms: as finite as a verb in -ed
    r"came|went|took|gave|made|said|told|found|kept|left|lost|won|sold|bought|held|saw|chose|began|"
    r"fell|rose|grew|knew|felt|met|ran|paid|spent|brought|"
    r"\w{3,}ed)\b|'s\b|'re\b|"
    # a verb in -s after a subject that is not a determiner's noun ("billing loses", "it lands")
    r"\b(?!(?:the|a|an|their|our|its|his|her|these|those|all|some|per|of|for|by|with|in|on|at|to)\b)"
    r"[A-Za-z]+\)?\s+(?!(?:is|was|has|this|its|his|as|us|plus|across|news|less|process|business)\b)"
    r"[a-z]{2,}(?<!s)s\b",
    re.IGNORECASE,
)
_AS_NOT_REASON = re.compile(
    r"(?:of|well|soon|part|long|much|many|far|early|late|quickly|if|though|per|usual|planned|discussed|agreed|expected|"
    r"promised|a|an|such|follows|needed|requested|mentioned|before|always|needed|noted|such|"
    # "as in Tuesday's proposal", "as with the pilot": a comparison, not a cause
    r"in|with|for|to|regards)\b",
    re.IGNORECASE,
)
#: Before "as": a verb of taking or holding a role ("joins as", "stays on as", "was hired as").
_ROLE_VERB_BEFORE = re.compile(
    r"\b(?:join(?:s|ed|ing)?|serv(?:e|es|ed|ing)|act(?:s|ed|ing)?|work(?:s|ed|ing)?|start(?:s|ed|ing)?|"
    r"stay(?:s|ed|ing)?(?: on)?|remain(?:s|ed|ing)?|continu(?:e|es|ed|ing)|hired|appointed|named|"
    r"promoted|signs? on|signed on|comes? (?:on|back)|returns?|returned|takes? over)\s*$",
    re.IGNORECASE,
)
#: Connectives after which the reason follows, tried in text order after the decision.
_AFTER = re.compile(
    r"\b(?P<conn>(?:mainly|mostly|largely|primarily|chiefly|partly|purely|simply) (?:for|because of|because|"
    r"due to)|because of|because|since|as|due to|owing to|given that|given|so that|so|after|"
    r"thanks to|in light of|on the grounds that|on account of|in view of|seeing that|now that|"
    # the shorthand of "because" in notes typed fast
    r"b/c|bc|cuz|coz|"
    # the reason labelled inline, in the decision's own line ("... at all 3 depots. reason: drivers ...")
    # (also said with whose reason it is: "Reason per Denise:", "Reason given by Priya:")
    r"(?<=[.;,]\s)reason(?:\s+given)?(?:\s+(?:per|by|from)\s+(?:(?-i:[A-Z][\w'-]*)|him|her|them))?"
    r"(?:\s+being|\s*:))\s+[\"“]?|"
    # (a dash between two dates or figures is a range: "Jan 1, 2027 - Dec 31, 2028")
    # (after a figure, a dash and a lowercase word open a clause: "quarterly from Q3 — cash is tight")
    r"(?P<colon>:|(?<![\d)])\s[—–]|(?<=[\d)])\s[—–-](?=\s+(?-i:[a-z]))|(?<![\d)])\s-)\s+|"
    # a comma splice: a pronoun and its state right after the decision ("decided yes, it's just
    # confusing people", "keeping 2 of the 6, they were our two best drivers")
    r"(?P<splice>[,;])\s+(?=(?:it|they|he|she|there|(?:our|their)\s+[\w-]+)(?:'s|'re|\s+(?:is|are|was|were|has|have|had|isn't|"
    r"aren't|wasn't|weren't|can't|won't|don't|doesn't|didn't)\b)"
    # or a verdict ("decided not to add it, too much overlap with their Workplace tool")
    r"|(?:just |simply |far |way )?too (?!late\b|early\b)\w+\b)",
    re.IGNORECASE,
)
_BEFORE = re.compile(
    r"^\W*(?P<conn>because of|because|since|as|due to|owing to|given that|given|after|thanks to|"
    r"in light of)\s+(?P<reason>[^,;]+?),\s+(?P<rest>.+)$",
    re.IGNORECASE,
)
#: What a reason after a colon or a dash opens with: a subject ("the budget was cut"), not a verb
#: or a figure that goes on describing the decision ("signed: adds 40 scanners").
_SUBJECT_START = re.compile(
    r"(?:the|their|our|his|her|its|my|your|they|we|he|she|it|there|this|that|these|those|a|an|"
    r"[A-Z][\w'-]*)\b"
)
#: A clause opened by a common noun as its subject and its verb: "onboarding is done", "budget
#: approval has stalled", "the reps can't keep up" (the determiner is _SUBJECT_START's).
_NOUN_SUBJECT = re.compile(
    r"[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,2}\s+(?:is|are|was|were|has|have|had|isn't|aren't|wasn't|"
    r"weren't|hasn't|haven't|can't|cannot|won't|doesn't|don't|didn't|needs|lacks|keeps)\b"
)
#: A list of three or more short items, one with a figure: the terms of what was agreed.
_TERMS_LIST = re.compile(r"(?=[^\d]*\d)[^,;]{1,40}(?:,\s*[^,;]{1,40}){2,}\.?")
#: A figure as a clause's subject ("$35 is already under list", "20% is our ceiling").
_FIGURE_SUBJECT = re.compile(r"[$€£]?\d[\d,.]*%?\s+(?:\w+\s+)?(?:is|are|was|were|would be)\b")
_THEN_SO = re.compile(
    r",?\s+(?:so|which is why|that is why|that's why|hence|therefore|and therefore|and so)\s+(?=\w)",
    re.IGNORECASE,
)
#: A sentence that says the one before it is why: "That's why they chose ...".
_WHY_BEFORE = re.compile(
    r"^\W*(?:that'?s why|that is why|this is why|hence|therefore|as a result|consequently|"
    # a sentence opened by "So" and a subject or a colon ("So we agreed: ...", "So: approved ...")
    # is the consequence of the sentence before it ("So far", "So, quick update" are not)
    r"so(?=\s*:|\s+(?:we|they|he|she|I|it|[A-Z][a-z]+)\s)|"
    r"for (?:that|this|these|those) reasons?|with (?:that|this|all that) in mind|because of (?:that|this)|"
    r"in light of (?:that|this)|given (?:that|this)(?=[,\s]+(?:we|they|he|she|I)\b))\b",
    re.IGNORECASE,
)
_REASON_SENTENCE = re.compile(
    r"^\W*(?:(?:the )?reason(?: for (?:this|that|it))?(?: given)?"
    r"(?: (?:per|by|from) (?:(?-i:[A-Z][\w'-]*)|him|her|them))?"
    r"(?: is| was| being)?(?: simple)?(?: that)?|cause|why|"
    r"that'?s because|this is because|it'?s because|because(?: of)?|"
    r"justification|rationale|(?:her|his|their|our|my|[A-Z][\w]*'s) (?:words|reason|"
    r"reasoning|explanation|math|logic|thinking|rationale|justification)|"
    r"(?:[A-Z]\w+ )?(?:said|says|explained):)\s*[:\-–]?\s+[\"“]?",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"\s*(?:;|:\s|\s[—–-]\s|,\s+and\s+(?:that|this|it)\b|\.\s|\.$|\?|!|$)")


#: A request opening a clause ("please send ...", "pls have ... ready", "can you ..."): what is
#: asked for, not why anything was decided.
_REQUEST = re.compile(r"(?:please|pls|plz|kindly|can you|could you|would you|let'?s)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Reason:
    """The reason span, where it lies in the raw log."""

    start: int
    end: int
    text: str


#: A sentence saying no decision was taken: whatever verb another sentence uses, the input
#: states no decision, so it gives no reason for one.
_NO_DECISION = re.compile(
    r"\b(?:no (?:decisions?|commitments?)(?: (?:yet|today|made|taken|was made|were made))?|"
    r"nothing (?:was |has been |is )?(?:decided|agreed|signed|committed)(?: yet)?)\b",
    re.IGNORECASE,
)
#: After a colon, a clause that states the decision's content (an action or a change), not why:
#: "Agreed with Helen: Umbrella drops to 160 seats", "moved to Commit: they renew in March".
_COLON_STATES = re.compile(
    r"^[^,;]*?\b\w+\s+(?:moves|drops|renews|goes|switches|starts|ends|increases|decreases|rises|"
    r"falls|changes|shifts|stays|signs|takes over|joins|becomes|adds|keeps)\b",
    re.IGNORECASE,
)


def reason(sentences: Sequence[Sentence], text: str | None = None) -> Reason | None:
    """The reason for the first decision that has one, or None (none when a sentence says no
    decision was taken). ``text``, the raw log the sentences come from, tells where a paragraph
    ends: a reason with no connective is read only in the decision's own paragraph."""
    if any(_NO_DECISION.search(s.text) for s in sentences):
        return None
    bare: Reason | None = None
    for i, sentence in enumerate(sentences):
        decision = decided(sentence.text)
        if decision is None:
            continue
        found = _in_sentence(sentence, decision) or _before(sentence)
        after = sentences[i + 1] if i + 1 < len(sentences) else None
        if found is None and after is not None and not after.text.endswith("?"):
            # the next sentence gives the reason only when it opens with it ("Reason: ...",
            # "Because ..."): a connective inside it is about its own clause
            found = _stated_reason(after)
            if found is None and not re.search(r",\s+so\b", after.text) and not _WHY_BEFORE.match(after.text):
                # a next sentence opened by "So" / "That's why" is this one's consequence: this
                # sentence is its reason, not the other way round
                found = _connected(after, 0, decision=False)
        if found is None and i > 0 and _WHY_BEFORE.match(sentence.text) and _causal_opener(sentence.text):
            # "So we agreed: ...", "Therefore they ...": the sentence before is why, whatever verbs it has
            previous = sentences[i - 1]
            found = _span(previous, 0, len(previous.text))
        if found is None and i > 0 and not DECISION.search(sentences[i - 1].text):
            # the sentence before gives the purpose of what is then agreed ("... so it lines up with
            # their fiscal year. We agreed."); its "because" explains its own clause ("The export
            # failed because the token expired. We switched them to a new key.")
            found = _connected(sentences[i - 1], 0, decision=False, causal=False)
            if found is None and _WHY_BEFORE.match(sentence.text):
                previous = sentences[i - 1]
                found = _span(previous, 0, len(previous.text))
        one_paragraph = after is not None and (text is None or "\n" not in text[sentence.end : after.start])
        if found is None and after is not None and one_paragraph and bare is None:
            # a sentence that only follows the decision is its reason when no sentence says why
            # in words ("Dana OK'd: ... Scanners stay at $19. We're doing this so we land under
            # $45k": the "so" says why)
            bare = _bare_reason(sentence, after)
        if found is not None:
            return found
    if any(decided(s.text) for s in sentences):
        # a line labelled as the justification ("Justification: ...", "Rationale: ..."), wherever it
        # stands in a note that states a decision, gives the reason
        for sentence in sentences:
            # (or a sentence naming the reason as such: "The driver is the 3-yr commit", "Her
            # reasoning: ...")
            if (
                _LABELLED_REASON.match(sentence.text)
                or _REASON_SENTENCE.match(sentence.text)
                or (_FACTOR.match(sentence.text))
            ):
                found = _stated_reason(sentence)
                if found is not None:
                    return found
    return bare


#: A line opened by a label naming the reason itself.
_LABELLED_REASON = re.compile(r"^\W*(?:reason|rationale|justification|why)\s*:", re.IGNORECASE)


def _causal_opener(text: str) -> bool:
    """Whether the sentence opens with a connective that makes the sentence before it its cause."""
    opener = r"^\W*(?:so|hence|therefore|as a result|consequently|that'?s why|that is why|this is why)\b"
    return bool(re.match(opener, text, re.IGNORECASE))


def _span(sentence: Sentence, start: int, end: int) -> Reason | None:
    text = sentence.text
    while start < end and text[start] in " ,:;\"'>":
        start += 1
    while end > start and text[end - 1] in " .,;:!?\"'":
        end -= 1
    if end - start < 3 or not re.search(r"[A-Za-z]{2}", text[start:end]):
        return None
    return Reason(sentence.start + start, sentence.start + end, text[start:end])


def _clause_end(text: str, start: int) -> int:
    match = _CLAUSE_END.search(text, start)
    return match.start() if match else len(text)


#: A verdict without a subject after a colon: "cancelled: too expensive for their stage".
_TOO_MUCH = re.compile(
    r"(?:just |simply |far |way |much |still )?too (?!many\b|much\b|late\b|early\b)\w+\b", re.I
)


#: A verdict on an amount: "too much overlap with their tool", "too many seats idle".
_TOO_MUCH_OF = re.compile(r"(?:just |simply |far |way )?too (?:much|many) [a-z]+", re.I)


def _connected(
    sentence: Sentence, offset: int, *, decision: bool = True, causal: bool = True
) -> Reason | None:
    """The reason after the first connective from ``offset`` on (a colon only after a decision;
    without ``causal``, only a purpose: "so", "so that")."""
    text = sentence.text
    matches = list(_AFTER.finditer(text, offset))
    # a word connective says why more surely than a colon: try those first
    for match in sorted(matches, key=lambda m: (m.group("colon") is not None, m.start())):
        conn = (match.group("conn") or ":").lower()
        if match.group("splice") is not None and not decision:
            continue
        rest_start = match.end()
        end = _clause_end(text, rest_start)
        rest = text[rest_start:end]
        if conn == ":" and not decision:
            continue
        if (
            match.group("colon") is not None
            and decision
            and match.group("colon").strip() == ":"
            and re.fullmatch(r"\s*(?:(?:with|between)\s+(?:[\w'-]+\s*){1,4})?", text[offset : match.start()])
            and not _TOO_MUCH.match(rest)
        ):
            # "Agreed: Kofi runs the demo", "Decided with Helen: ...": the colon opens the content
            # (a dash does not: "going ahead with the pilot — their team can't keep up" says why)
            continue
        if not causal and not conn.startswith("so"):
            continue
        if match.group("colon") is not None and (
            not (
                _SUBJECT_START.match(rest)
                or _NOUN_SUBJECT.match(rest)
                or _FIGURE_SUBJECT.match(rest)
                or _TOO_MUCH.match(rest)
            )
            or decided(rest) is not None
            or _COLON_STATES.match(rest)
        ):
            continue  # what follows a colon says why only when it is not the decision's content
        if match.group("colon") is not None and _TERMS_LIST.fullmatch(rest.strip()):
            continue  # "agreed: Enterprise plan, $52/seat/month, 1-year term": the terms, not why
        if conn == "after" and re.match(r"all\b", rest, re.IGNORECASE):
            continue  # "after all": an idiom, not a time or a cause
        # "cancelled: too expensive", "decided not to add it, too much overlap with their tool"
        verdict = conn == ":" and (_TOO_MUCH.match(rest) is not None or _TOO_MUCH_OF.match(rest) is not None)
        # "given they commit to a 24 months term": a pronoun and its verb are a clause too
        finite = _FINITE.search(rest) or (conn == "given" and _PRONOUN_CLAUSE.match(rest))
        if conn in {"since", "as", "after", ":", "so", "given"} and not finite and not verdict:
            continue
        opens = not re.search(r"\w", text[: match.start()])
        if opens and conn in {"since", "as", "after"} and not _FINITE.search(rest.split(",", 1)[0]):
            continue  # "Since go-live, swaps approved in the web app do not show": a time, then the clause
        if conn == "as" and re.search(
            r"\bas\s+(?:soon|long|far|much|well|quickly|early|late)\s+$", text[: match.start()], re.I
        ):
            continue  # "enabled as soon as the amendment is countersigned": a time or a condition
        if (
            conn == "as"
            and (
                _AS_NOT_REASON.match(rest)
                # "joins as VP Operations", "stays on as sponsor": a role taken, not a cause
                or _ROLE_VERB_BEFORE.search(text[: match.start()])
                or not re.search(r"[,\w]\s*$", text[: match.start()])
                # "as approved", "as written": a participle with no subject is a manner, not a cause
                or re.match(r"(?:\w+ly\s+)?\w+(?:ed|en)\b(?!\s+(?:is|are|was|were|has|have)\b)", rest, re.I)
            )
        ):
            continue
        if conn == "so" and re.match(r"(?:far|much|many|long|i|as)\b", rest, re.IGNORECASE):
            continue
        if conn == "so" and re.match(r"(?:[\w'-]+\s+){1,2}now\b", rest, re.IGNORECASE):
            continue  # "signed the add-on, so they now have 100 seats": what followed, not why
        if conn.startswith("so") and _REQUEST.match(rest):
            continue  # "LA's lead is joining, so pls have the view ready": a request, not a purpose
        found = _span(sentence, rest_start, end)
        if found is not None:
            return found
    return None


def _in_sentence(sentence: Sentence, decision: re.Match[str]) -> Reason | None:
    """The reason after the decision, or before it in "<reason>, so <decision>"."""
    text = sentence.text
    so = None
    for found_so in _THEN_SO.finditer(text, 0, decision.start()):
        so = found_so
    if so is not None and so.end() <= decision.start():
        lead = text.rfind(":", 0, so.start())
        found = _span(sentence, lead + 1 if lead >= 0 else 0, so.start())
        if found is not None and _FINITE.search(found.text):
            return found
    return _connected(sentence, decision.end())


def _before(sentence: Sentence) -> Reason | None:
    """ "Because of the freeze, they postponed": the reason that opens the sentence."""
    match = _BEFORE.match(sentence.text)
    if match is None or not DECISION.search(match.group("rest")):
        return None
    conn, why = match.group("conn").lower(), match.group("reason")
    if conn in {"since", "as", "after", "given"} and (not _FINITE.search(why) or _AS_NOT_REASON.match(why)):
        return None  # "As promised, ...", "Since March, ...": a manner or a time, not a cause
    return _span(sentence, match.start("reason"), match.end("reason"))


_FACTOR = re.compile(
    r"\bthe (?:main |real |key |deciding |decisive )?(?:reason|factor|driver)s?\s+(?:was|is|were)\s+",
    re.IGNORECASE,
)
_CLEFT = re.compile(
    r"^(?:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?\s+(?:said|says|told us|explained|confirmed)\s+(?:that\s+)?)?"
    r"(?P<reason>.+?)\s+(?:was|is|were|are)\s+(?:what (?:tipped|decided|drove|made)\b|"
    r"the (?:main |real |key )?(?:reason|deciding factor|driver)\b|why\b)",
    re.IGNORECASE,
)


def _explained_end(text: str, start: int) -> int:
    """The end of a reason named as the factor that decided: its sentence, across a colon that
    goes on to explain it (only a semicolon or a full stop ends it)."""
    end = re.search(r";|\.\s|\.$|$", text[start:])
    return start + (end.start() if end else 0)


def _stated_reason(sentence: Sentence) -> Reason | None:
    """ "Reason: the new CFO wants one vendor." / "The reason is ..." / "X was what tipped it" as
    the next sentence."""
    match = _REASON_SENTENCE.match(sentence.text)
    factor = _FACTOR.search(sentence.text) if match is None else None
    if factor is not None:  # "The driver was SSO: their IT ..." - the colon explains, it does not end it
        return _span(sentence, factor.end(), _explained_end(sentence.text, factor.end()))
    if match is None:
        cleft = _CLEFT.match(sentence.text)
        if cleft is None:
            return None
        # "SCIM was the deciding factor: Theo's team loses half a day a week" - the colon explains
        return _span(sentence, cleft.start("reason"), _explained_end(sentence.text, cleft.end()))
    return _span(sentence, match.end(), _clause_end(sentence.text, match.end()))


#: A sentence after a decision that is not why: what is still open, another point accepted, or
#: the decision's own terms (a start date, a term, a year).
_NOT_WHY = re.compile(
    r"\bstill (?:open|pending|undecided|to be (?:decided|agreed|confirmed))\b|\b(?:tbd|tbc)\b|"
    r"\b(?:is|are) (?:all )?(?:fine|ok|okay|acceptable|agreed)\b|"
    r"\b(?:commencement|start|effective|end) date\b|\binitial term\b|\b20\d\d\b",
    re.IGNORECASE,
)
#: A pronoun and the verb after it: "they commit to ...", "we lose ...".
_PRONOUN_CLAUSE = re.compile(r"(?:they|we|you|I|he|she|it)\s+(?:also\s+|now\s+|still\s+)?[a-z]{3,}\b")
#: Anywhere in a sentence: it asks the reader for something.
_ASKS = re.compile(
    r"\b(?:let (?:me|us) know|please|feel free|(?:do not|don't) hesitate|get back to (?:me|us))\b", re.I
)
#: What opens a sentence that is not a reason: a next step, an errand, a label, a greeting, a figure.
_NOT_A_REASON_OPENER = re.compile(
    r"^\W*(?:next|f/?u|action|to-?do|todo|owner|ps|p\.s\.|thanks|thank you|best|cheers|regards|hi|hello|"
    r"dear|sorry|also|and|but|plus|otherwise|everything else|please|can|could|would|let's|let us|"
    r"[A-Z][\w'-]*\s+(?:to|will|'ll|is going to)\s|I\s+(?:will|'ll|to|send|sent|said|told|asked)\b|"
    r"we\s+(?:will|'ll)\b|[\d$€£¥])",
    re.IGNORECASE,
)
#: A negated will ("won't cut over", "will not sign") or want ("Legal doesn't want Dublin treated
#: differently"): a refusal, a constraint which a reason may state.
_REFUSAL = re.compile(
    r"(?:won'?t|will not|would not)\s+\w+|(?:doesn'?t|does not|don'?t|do not) want", re.IGNORECASE
)
#: A state or a constraint stated in a clause: a copula, a negated modal, a verb of need or burden.
_CIRCUMSTANCE = re.compile(
    r"\b(?:is|are|was|were|'s|'re|has been|have been|can't|cannot|won't|wouldn't|couldn't|isn't|aren't|"
    r"doesn't|don't|didn't|wasn't|weren't|hasn't|haven't|hadn't|no longer|needs?|lacks?|runs?|means?|"
    # a state of mind or a burden ("Finance wants one payout report", "it saves Becca a tool"),
    # and what has happened ("the refresh has eaten two engineer-weeks")
    r"wants|prefers|saves|costs|(?:has|have|had)\s+(?:\w+ly\s+)?\w+(?:ed|en|t))\b",
    re.IGNORECASE,
)


#: What must happen before a decision takes effect: a step still to take, not its cause.
_PRECONDITION = re.compile(
    r"\b(?:needs?|has|have) to\s+\w+\b[^.;]*\b(?:first|beforehand|before (?:we|they|it|that|then|signing))\b",
    re.IGNORECASE,
)


def _bare_reason(decision: Sentence, after: Sentence) -> Reason | None:
    """The sentence right after a decision, with no connective, that states a circumstance ("We
    pushed the launch to May. Their warehouse is shut in April and nobody can train."): read as
    the decision's reason when it takes no decision of its own, assigns no errand, asks nothing,
    and opens with its subject; one that draws its own consequence (", so ...") explains that."""
    text = after.text
    if not decision.text.rstrip().endswith((".", "!")) or text.endswith("?"):
        return None
    if _NOT_A_REASON_OPENER.match(text) or not _SUBJECT_START.match(text):
        return None
    if any(not _REFUSAL.fullmatch(m.group(0)) for m in taken_decisions(text)):
        return None  # a decision of its own; a refusal ("she won't cut over then") is a constraint
    if _THEN_SO.search(text):
        return None  # "X, so Y": the sentence draws its own consequence, it does not explain another
    if re.search(rf"\b(?:will|'ll|is going to|are going to)\s+(?:{ERRANDS})\b", text, re.IGNORECASE):
        return None  # "Tom's team will send the PO next week": an errand, the next step
    if _NOT_WHY.search(text):
        return None  # "Invoicing is still open", "Your tidy-ups are fine", "The start date is 1 July"
    if _ASKS.search(text):
        return None  # "I trust this accords ..., but do let me know": a request, not why
    end = _clause_end(text, 0)
    if _PRECONDITION.search(text[:end]):
        return None  # "Legal needs to review the DPA first": a step still to take, not why
    # a state or a constraint, not an action under way ("Engineering is rolling out the fix")
    stated = [
        m for m in _CIRCUMSTANCE.finditer(text, 0, end) if not re.match(r"\s+\w+ing\b", text[m.end() : end])
    ]
    if not stated or len(re.findall(r"[A-Za-z]{2,}", text[:end])) < 5:
        return None
    return _span(after, 0, end)
