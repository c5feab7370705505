#!/usr/bin/env python3
"""Generates the intent-classification set of the encoders benchmark (no public set ships with
a Debian or PyPI package usable offline). Eight intents of a customer-support assistant; each
has sentence templates and slot values. Train and test draw from disjoint halves of both the
templates and the slot values, so a test sentence is a paraphrase of nothing in training:
an encoder must generalise beyond shared words. 15% of test words get a typo (a swapped,
dropped or doubled letter) and sentences vary in case.

Writes DIR/train.tsv, DIR/test.tsv (LABEL<TAB>TEXT) and DIR/unlabelled.txt (training-side
texts without labels, for training an unsupervised fastText model), DIR/texts.txt (test
texts, for throughput). Usage: make_text_dataset.py DIR [--seed S] [--train N] [--test N]
"""
import argparse
import os
import random

INTENTS = {
    "refund": (
        ["i want my money back for the {x}", "how do i get a refund on the {x}",
         "please refund the {x} i bought", "can you return the cost of my {x}",
         "i would like to be reimbursed for the {x}", "the {x} was faulty, give me my money back",
         "refund request for order with a {x}", "send back the {x} and get paid back",
         "is a refund possible for the {x}", "i demand a refund, the {x} broke"],
        ["jacket", "phone", "lamp", "blender", "headset", "sofa", "kettle", "watch", "camera",
         "printer", "mattress", "bicycle"]),
    "shipping": (
        ["where is my {x}", "my {x} has not arrived yet", "when will the {x} be delivered",
         "track the parcel with my {x}", "the courier lost my {x}", "how long does shipping of a {x} take",
         "delivery status of the {x}", "the {x} is late, where is it",
         "has the {x} been dispatched", "estimated arrival of my {x}"],
        ["order", "package", "parcel", "shipment", "box", "delivery", "purchase", "item",
         "consignment", "order number", "goods", "bundle"]),
    "password": (
        ["i forgot my {x}", "reset my {x} please", "how can i change the {x}",
         "my {x} does not work anymore", "i cannot log in, the {x} is wrong",
         "locked out because of the {x}", "recover the {x} of my account",
         "the {x} expired, set a new one", "send me a link to renew my {x}",
         "update the {x} for my login"],
        ["password", "passcode", "pin", "login code", "passphrase", "secret word",
         "access code", "security code", "sign-in password", "account password",
         "credentials", "pass word"]),
    "billing": (
        ["why was i charged twice for the {x}", "there is a wrong amount on my {x}",
         "explain this charge on the {x}", "i was overcharged on my {x}",
         "the {x} shows a payment i did not make", "question about my {x}",
         "dispute a charge on the {x}", "my {x} is higher than expected",
         "cancel the duplicate payment on my {x}", "who billed my {x}"],
        ["invoice", "bill", "credit card", "statement", "bank account", "receipt",
         "monthly bill", "card statement", "payment", "subscription fee", "debit", "account"]),
    "cancel": (
        ["cancel my {x}", "i want to stop the {x}", "please end my {x}",
         "how do i unsubscribe from the {x}", "terminate the {x} today",
         "i no longer need the {x}", "stop renewing my {x}", "close my {x}",
         "remove me from the {x}", "discontinue the {x} please"],
        ["subscription", "membership", "plan", "contract", "service", "newsletter",
         "premium account", "monthly plan", "trial", "annual plan", "account", "booking"]),
    "opening_hours": (
        ["what time does the {x} open", "is the {x} open on sunday", "when does the {x} close",
         "opening hours of the {x}", "are you open late at the {x}",
         "until when is the {x} open today", "is the {x} closed on holidays",
         "what are the hours of the {x}", "can i visit the {x} in the evening",
         "the {x} schedule for the weekend"],
        ["store", "shop", "branch", "outlet", "office", "showroom", "warehouse", "service desk",
         "pickup point", "support center", "boutique", "counter"]),
    "complaint": (
        ["the {x} was rude to me", "i am unhappy with the {x}", "terrible experience with your {x}",
         "i want to complain about the {x}", "the {x} ignored my request",
         "very disappointed by the {x}", "your {x} was unhelpful", "file a complaint about the {x}",
         "the {x} treated me badly", "awful service from the {x}"],
        ["staff", "agent", "driver", "cashier", "manager", "support team", "technician",
         "call center", "salesperson", "courier", "receptionist", "employee"]),
    "address_change": (
        ["change the {x} on my account", "i moved, update my {x}", "new {x} for deliveries",
         "edit the {x} in my profile", "my {x} is wrong, please fix it",
         "set a different {x} for the order", "update the {x} before shipping",
         "how do i modify my {x}", "replace the old {x}", "correct the {x} on file"],
        ["address", "shipping address", "home address", "postal address", "street",
         "billing address", "delivery address", "postcode", "zip code", "apartment number",
         "city", "mailing address"]),
}


def typo(word, rng):
    if len(word) < 4:
        return word
    i = rng.randrange(1, len(word) - 1)
    kind = rng.randrange(3)
    if kind == 0:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == 1:
        return word[:i] + word[i + 1:]
    return word[:i] + word[i] + word[i:]


def sentence(template, filler, rng, noisy):
    words = template.format(x=filler).split()
    if noisy:
        words = [typo(w, rng) if rng.random() < 0.15 else w for w in words]
    text = " ".join(words)
    r = rng.random()
    if r < 0.2:
        text = text.capitalize()
    elif r < 0.25:
        text = text.upper()
    return text + rng.choice(["", "", "?", ".", "!"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train", type=int, default=800)
    parser.add_argument("--test", type=int, default=800)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.dir, exist_ok=True)
    split = {}
    for intent, (templates, fillers) in INTENTS.items():
        t, f = templates[:], fillers[:]
        rng.shuffle(t)
        rng.shuffle(f)
        split[intent] = ((t[:len(t) // 2], f[:len(f) // 2]), (t[len(t) // 2:], f[len(f) // 2:]))
    intents = sorted(INTENTS)

    def draw(n, side, noisy):
        rows = []
        for i in range(n):
            intent = intents[i % len(intents)]
            templates, fillers = split[intent][side]
            rows.append((intent, sentence(rng.choice(templates), rng.choice(fillers), rng, noisy)))
        rng.shuffle(rows)
        return rows

    train, test = draw(args.train, 0, False), draw(args.test, 1, True)
    unlabelled = draw(20000, 0, False)
    with open(os.path.join(args.dir, "train.tsv"), "w") as f:
        f.writelines(f"{label}\t{text}\n" for label, text in train)
    with open(os.path.join(args.dir, "test.tsv"), "w") as f:
        f.writelines(f"{label}\t{text}\n" for label, text in test)
    with open(os.path.join(args.dir, "unlabelled.txt"), "w") as f:
        f.writelines(f"{text.lower()}\n" for _, text in unlabelled)
    with open(os.path.join(args.dir, "texts.txt"), "w") as f:
        f.writelines(f"{text}\n" for _, text in test)


if __name__ == "__main__":
    main()
