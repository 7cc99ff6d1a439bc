"""Writes bench/data/chatter.json, the facts-among-chatter benchmark's conversations, from the scenes below.

Two parts with different people, places and topics: `tune` (for tuning) and `held_out` (reported apart).
Each is several days of chat on two channels. The facts, their revisions, the look-alike statements
(near misses) and the questions someone asks before the answer are written by hand; the chatter between
them (greetings, acks, plans, small talk) is drawn from hand-written lines and templates, with the
lowercase and typos of real chat. A question asks each fact once, in other words than the fact's.
Seeded: the same script writes the same file.

    python bench/make_chatter.py [--out bench/data/chatter.json]
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "chatter.json"
TARGET_LINES = 500
DAY_START = timedelta(hours=7, minutes=40)
DAY_SPAN = timedelta(hours=15)

Said = tuple[str, str]  # (speaker, text)


@dataclass
class Placed:
    """One statement placed in the part: `at` is day + fraction of the day, then who says it where;
    `then` are the replies that follow it at once, `span` the sentence a long statement's fact is in."""

    at: float
    channel: str
    who: str
    text: str
    then: list[Said] = field(default_factory=list)
    span: str | None = None


@dataclass
class Fact:
    key: str
    question: str
    answer: Placed
    original: Placed | None = None
    near: list[Placed] = field(default_factory=list)
    asked: list[Placed] = field(default_factory=list)


@dataclass
class Part:
    people: list[str]
    channels: list[str]
    start: str  # the first day's date
    days: int
    names: list[str]  # every proper name the part uses: no other part may use one
    facts: list[Fact]
    longs: list[Placed]  # pasted paragraphs that hold no fact
    topical: list[list[tuple[int, str]]]  # the part's own small talk: (speaker slot, text) exchanges


def P(at: float, channel: str, who: str, text: str, *then: Said, span: str | None = None) -> Placed:  # noqa: N802
    return Placed(at, channel, who, text, list(then), span)


G, R = "#general", "#random"
TUNE_FACTS = [
    Fact("dog", "What did Theo's family call the puppy they adopted?",
         P(1.4, G, "Theo", "we went to the shelter sat and came home with a beagle pup. kids named her biscuit, she already ate a sock",
           ("Priya", "omg stop. pics pls"), ("Keiko", "best name ever"), ("Theo", "shes asleep on my foot rn")),
         near=[P(0.6, G, "Theo", "the guy next door got a husky called storm and it howls at 5am every single day",
                 ("Dan", "earplugs mate")),
               P(3.2, R, "Keiko", "my childhood dog was called mochi, still miss that idiot")]),
    Fact("allergy", "What food could land Priya in the emergency room?",
         P(2.5, G, "Priya", "for saturdays potluck: i carry an epipen, peanuts can genuinely put me in hospital so pls label stuff",
           ("Dan", "noted, no satay then"), ("Maya", "ill print labels")),
         near=[P(1.7, R, "Priya", "i just cant do mushrooms. the texture. no.", ("Theo", "more for me")),
               P(4.3, G, "Maya", "fyi dan sneezes his head off around cats so dont bring yours on saturday lol")],
         asked=[P(2.1, G, "Keiko", "priya is there anything you really cant eat? doing the menu for sat")]),
    Fact("wedding", "Where are Dan and his partner tying the knot?",
         P(0.8, R, "Dan", "we booked it!! getting married in porto, june next year. vineyard thing",
           ("Theo", "congrats man!!"), ("Keiko", "so happy for you two")),
         near=[P(3.6, G, "Dan", "my sisters wedding is in lisbon in april so we're doing portugal twice this year lol")]),
    Fact("rate", "What is Maya's hourly fee for teaching kids now?",
         P(4.5, G, "Maya", "rent went up so ive raised my lesson price to 55/hr from april. parents didnt even blink",
           ("Priya", "good, you were undercharging")),
         original=P(0.5, G, "Maya", "tutoring is picking up, i charge 45 an hour now, mostly gcse maths"),
         near=[P(2.8, R, "Keiko", "the plumber charged 90 quid just to turn up. call-out fee. ninety.", ("Dan", "wrong trade mate"))]),
    Fact("city", "Which city is Keiko based in now?",
         P(5.2, G, "Keiko", "life update: leeds didnt work out, im in sheffield now, 10 min walk to work",
           ("Maya", "ooh nice"), ("Dan", "welcome to the steel city")),
         original=P(0.3, G, "Keiko", "finally moved into the leeds flat. boxes everywhere, cant find a single fork"),
         near=[P(2.4, R, "Keiko", "going to see my parents in york this weekend, mum is making a roast")],
         asked=[P(4.9, R, "Dan", "keiko where are you living these days, still up north?")]),
    Fact("gym", "Why did Theo change where he works out?",
         P(1.2, G, "Theo", "cancelled ironworks. they kept scrapping the 6am classes so whats even the point. signed up at pulse instead",
           ("Maya", "ok"), ("Priya", "pulse has a sauna tho")),
         near=[P(3.3, G, "Priya", "my gym put prices up AGAIN, 50 a month now"),
               P(4.8, R, "Theo", "gym was packed tonight, couldnt get near a bench")]),
    Fact("boiler", "When is the engineer visiting to repair Maya's boiler?",
         P(2.2, G, "Maya", "heating guy finally booked, thursday morning, somewhere between 8 and 10",
           ("Theo", "about time")),
         near=[P(3.7, G, "Maya", "and now the landlord says the window will be fixed 'sometime next month'. sure.")],
         asked=[P(1.3, G, "Theo", "maya did the landlord ever say when someone is coming for the boiler?",
                  ("Maya", "nope. still cold showers"))]),
    Fact("car", "What does Dan drive at the moment?",
         P(3.5, R, "Dan", "sold the golf!! got a used yaris, sooo much cheaper on petrol", ("Theo", "rip golf")),
         original=P(0.4, R, "Dan", "the golf turned 15 this year and still starts every morning, 2009 legend"),
         near=[P(2.6, R, "Dan", "my dad just bought a volvo estate, hes so proud of it, washes it every sunday")]),
    Fact("birthday", "When is Priya's birthday?",
         P(1.6, R, "Priya", "fun fact i was born on pi day, 14th march. yes i get pie every year",
           ("Dan", "noted"), ("Maya", "pie AND cake?")),
         near=[P(3.1, R, "Priya", "need gift ideas, mums birthday is the 2nd of may and shes impossible")],
         asked=[P(0.9, R, "Dan", "wait when's your bday priya? we should do something")]),
    Fact("job", "Where is Keiko employed now?",
         P(4.2, G, "Keiko", "first week as an archivist at the city museum!! no more library shifts",
           ("Priya", "dream job"), ("Theo", "congrats keiko")),
         original=P(0.7, G, "Keiko", "campus library is so quiet this week, i reshelved like 3 books all day"),
         near=[P(2.9, G, "Keiko", "my brother just got a job at a bank in manchester, he hates wearing a tie")]),
    Fact("bins", "Which day does the rubbish get taken away at Maya's place?",
         P(3.4, G, "Maya",
           "pasting the residents newsletter bc nobody reads email: 'Dear residents, thank you to everyone who came to "
           "the spring meeting in the community room. The lift in block B has been serviced and the engineer has "
           "confirmed it is safe to use again; please report any strange noises to the office rather than the "
           "caretaker's personal phone. The bike store will get a new lock in the next few weeks and keys will be "
           "handed out at the office against a signature. Following the new council contract, refuse and recycling "
           "will now be collected on Tuesdays rather than Fridays, so please have your bins out by 7am. The garden "
           "working group is looking for volunteers for the planting day, tea and biscuits provided. Finally, a "
           "reminder that the hallways are a fire escape route and must be kept clear of prams, bikes and shoes. "
           "Kind regards, the residents committee'",
           ("Theo", "tl;dr?"), ("Maya", "read it theo"),
           span="Following the new council contract, refuse and recycling will now be collected on Tuesdays rather "
                "than Fridays, so please have your bins out by 7am."),
         near=[P(1.8, G, "Maya", "the parcel lockers in our building only get emptied on fridays, so annoying")]),
    Fact("chili", "What is the hidden ingredient in Dan's chili?",
         P(2.7, R, "Dan", "secret to my chilli is a square of dark chocolate. tell no one", ("Keiko", "ooh")),
         near=[P(4.4, R, "Theo", "dan your chilli was way too hot for me last time lol", ("Dan", "weak"))]),
    Fact("school", "Which school will Theo's eldest kid be going to?",
         P(1.9, G, "Theo", "big news here, our oldest got a place at greenfield primary for september",
           ("Maya", "yay!"), ("Keiko", "thats the good one right")),
         near=[P(3.8, G, "Theo", "my nephew is at st marys, they have a pool, so jealous")]),
    Fact("flight", "On what date does Priya set off for Canada?",
         P(4.6, R, "Priya", "airline moved us, we now leave on the 5th instead. two days less of poutine",
           ("Dan", "boo")),
         original=P(0.6, R, "Priya", "flights booked, montreal on the 3rd of may!!"),
         near=[P(2.3, R, "Dan", "im off to berlin on the 3rd too lol, work thing")]),
    Fact("wifi", "What do we type to get online at the cabin?",
         P(3.9, G, "Keiko", "for the cabin weekend: wifi is bluefern42, all lowercase", ("Dan", "legend")),
         near=[P(4.1, G, "Keiko", "oh and the door code for the cabin is 1987, dont lose it")],
         asked=[P(2.95, G, "Priya", "keiko do we need a password for the internet at the cabin?")]),
    Fact("bike", "What happened to Maya's bicycle?",
         P(2.05, G, "Maya", "someone nicked my bike from outside the station. the blue one. locked and everything",
           ("Priya", "noooo"), ("Theo", "report it at least")),
         near=[P(0.95, G, "Theo", "flat tyre on the bike again, third one this month")]),
    Fact("dentist", "When is Dan's dental appointment now?",
         P(4.7, R, "Dan", "dentist rang, moved me to the 19th. more days of dread"),
         original=P(1.5, R, "Dan", "dentist on the 12th, already dreading it"),
         near=[P(3.05, R, "Priya", "my dentist appt is on the 12th too haha")]),
    Fact("ferry", "How often does the boat over to the island go?",
         P(5.4, R, "Theo",
           "ok trip notes for anyone going this summer, copied from my notes app: the drive up took about five hours "
           "with two stops, and the services after the bridge are the only decent ones, so fill up there. the "
           "cottage was fine, the beds are hard but the view makes up for it and the kitchen has everything. the "
           "ferry across to the island only sails twice a day, 7am and 4pm, so plan the whole day around it. there "
           "is one shop on the island and it shuts at 5, bring cash because the card machine was down both times. "
           "the beach on the north side is the good one, the south one is all rocks. kids loved the seal boat "
           "trip, it was 15 each and worth it. midges were bad in the evenings so bring the spray",
           ("Maya", "saving this"), ("Dan", "the seal boat!!"),
           span="the ferry across to the island only sails twice a day, 7am and 4pm, so plan the whole day around it."),
         near=[P(2.55, R, "Theo", "the bus from the station to the harbour runs every 20 min, easy")]),
]
TUNE_LONGS = [
    P(1.1, R, "Priya",
      "this article is making me feel attacked: 'Researchers followed eight hundred adults for two years and found "
      "that those who used a phone or tablet in the hour before bed took on average twenty minutes longer to fall "
      "asleep and reported feeling less rested the next morning. The effect was strongest among people who "
      "scrolled social media rather than reading or listening to music. The authors suggest keeping devices out "
      "of the bedroom, dimming screens in the evening and setting a regular wind-down time. They caution that "
      "the study cannot show cause and effect, since people who sleep badly may simply reach for their phones "
      "more often.'", ("Theo", "reading this at 1am lol")),
    P(2.45, G, "Dan",
      "potluck rules from the group chat bc people keep asking: bring one dish that feeds about six, write what it "
      "is on a bit of paper with the main ingredients so people can check, bring your own drinks, we have plates "
      "and cutlery but not enough glasses, arrive from 6 and food goes out at 7, no one is allowed to bring "
      "another lasagne after last time, and whoever brings dessert gets first pick of the leftovers. if youre "
      "bringing kids thats fine but they are your responsibility near the pond. parking is on the street, "
      "not in the neighbours drive, he WILL come out and shout. oh and tidy up after yourselves, last year we "
      "found a fork in the flowerbed in june", ("Keiko", "no lasagne, got it")),
]
TUNE_TOPICAL = [
    [(0, "anyone else's kids off sick this week"), (1, "both of mine, its a plague house"), (0, "same here, third day")],
    [(0, "the school run this morning was chaos, roadworks everywhere"), (1, "the whole high street is dug up")],
    [(0, "who watched the match"), (1, "dont talk to me about it"), (2, "that penalty was never a penalty"), (1, "NEVER")],
    [(0, "landlord emailed again about the inspection"), (1, "hide the washing"), (0, "and the cat lol")],
    [(0, "pub quiz thurs?"), (1, "in"), (2, "in if we're not last again"), (0, "we were second last, progress")],
    [(0, "council tax went up again, cool cool cool"), (1, "everything has")],
    [(0, "meal prep sunday went well, 5 lunches done"), (1, "look at you, adulting")],
    [(0, "anyone know a good cheap barber near the station"), (1, "the one next to greggs is fine"),
     (0, "fine is all i need")],
    [(0, "traffic on the ring road is insane today"), (1, "took me 40 min to go 3 miles")],
    [(0, "new season of that baking show starts tonight"), (1, "no spoilers in here pls"), (2, "it hasnt even aired lol")],
    [(0, "my manager just scheduled a meeting about meetings"), (1, "classic"), (2, "could have been an email")],
    [(0, "is it just me or is the wifi in the office awful today"), (1, "its awful"), (2, "tethering off my phone")],
    [(0, "cleaned the oven for the first time in a year, do not recommend"), (1, "the fumes")],
    [(0, "anyone want my old sofa, free, you collect"), (1, "what colour"), (0, "grey, slightly cat scratched"),
     (1, "tempting")],
]

C, B = "#crew", "#bandroom"
HELD_FACTS = [
    Fact("cat", "What name did Ines's family give the animal they brought home from the shelter?",
         P(1.3, C, "Ines", "we adopted a rescue yesterday!! grey tabby, 2 yrs old, the kids called him pixel",
           ("Greta", "pixel!!! need to meet him"), ("Omar", "cat tax pls")),
         near=[P(3.4, C, "Ines", "the neighbours siamese luna keeps coming in through our kitchen window",
                 ("Wen", "free cat")),
               P(4.5, C, "Greta", "my aunt has a cat called noodle who only eats ham")]),
    Fact("allergy", "Which food is dangerous for Omar?",
         P(2.4, C, "Omar", "heads up for the bbq: prawns and crab make my throat close up, i carry an epipen",
           ("Bram", "no seafood then, noted")),
         near=[P(0.7, C, "Omar", "olives are disgusting and i will die on this hill", ("Lucas", "coward")),
               P(3.7, C, "Bram", "ines cant stand coriander so ill keep it off the salads")],
         asked=[P(1.9, C, "Bram", "omar anything you cant eat? sorting the bbq shopping")]),
    Fact("wedding", "In which city will Greta tie the knot?",
         P(0.5, C, "Greta", "ok its official, we're getting married in tallinn on august 9th",
           ("Ines", "AAAA congrats"), ("Wen", "so happy for you")),
         near=[P(2.8, C, "Greta", "my cousins wedding in riga last summer had a 6 hour dinner. six.")]),
    Fact("rate", "What's Bram's current fee per hour for teaching?",
         P(4.3, B, "Bram", "bumped the lesson price to 38/hr, waiting list is 6 deep so why not", ("Lucas", "get that money")),
         original=P(0.8, B, "Bram", "im teaching guitar on the side now, 30 an hour, mostly teenagers"),
         near=[P(2.6, C, "Wen", "the electrician charged us 70 just to walk in the door, before doing anything")]),
    Fact("city", "What city does Wen call home now?",
         P(4.8, C, "Wen", "so ive left ghent, new job came through so im in antwerp from this week",
           ("Ines", "big moves"), ("Omar", "congrats!!")),
         original=P(0.3, C, "Wen", "settled in ghent now! the canals are unreal"),
         near=[P(2.2, C, "Wen", "my sister lives in bruges, visiting her on sunday")],
         asked=[P(3.6, C, "Lucas", "wen where are you living atm, still belgium?")]),
    Fact("practice", "What evening does the band rehearse now?",
         P(3.3, B, "Lucas", "practice moves to thursdays from next week, kai has a night class on weds",
           ("Bram", "fine by me")),
         original=P(0.6, B, "Lucas", "reminder band practice is wednesdays 7pm at the unit"),
         near=[P(1.6, B, "Lucas", "open mic at the fox is every wednesday if anyone wants to try new stuff")]),
    Fact("quit", "Why did Omar leave his last job?",
         P(1.1, C, "Omar", "handed in my notice at the warehouse. the night shifts were wrecking my sleep and my head",
           ("Greta", "good for you"), ("Wen", "ok")),
         near=[P(3.8, C, "Omar", "my brother quit his job to go travelling in vietnam, mum is furious")]),
    Fact("garden", "What vegetable is thriving in Greta's plot?",
         P(2.1, C, "Greta", "allotment report: tomatoes all died but the courgettes are out of control, picked 40 already",
           ("Ines", "send some my way")),
         near=[P(4.1, C, "Greta", "the guy on the next plot grows pumpkins the size of a sofa")]),
    Fact("van", "When can Bram collect his vehicle from the mechanic?",
         P(4.6, C, "Bram", "garage rang, parts are stuck somewhere, van wont be done til monday now", ("Lucas", "ugh")),
         original=P(1.7, C, "Bram", "garage says the van will be ready friday afternoon"),
         near=[P(3.1, C, "Bram", "and the vans MOT is due in november, joy")]),
    Fact("son", "How old is Ines's boy?",
         P(2.7, C, "Ines", "my son lost his first tooth at dinner, hes 6 and acting like he won the lottery",
           ("Omar", "tooth fairy rates are wild now")),
         near=[P(0.9, C, "Ines", "my niece turns 9 on saturday, she wants a drum kit, her parents do not")]),
    Fact("gig", "What time does Lucas's group start playing?",
         P(3.5, B, "Lucas",
           "copying the gig post here so its all in one place: 'This Saturday at the Old Granary we are back for "
           "our first full show since the winter break, with new songs from the record we have been recording all "
           "spring. Tickets are still available at the door, cash or card, and students get a discount with a "
           "valid card. Doors are at 8pm, the support act is on at 8:45, and we go on stage at 9:45 sharp. The "
           "venue is fully accessible and there is a quiet room upstairs if the crowd gets too much. Merch will "
           "be by the bar all night, including the last of the blue shirts. Please do not park in the yard behind "
           "the building, the neighbours have asked us nicely. See you down the front.'",
           ("Wen", "sharing it"), ("Greta", "the blue shirts!!"),
           span="Doors are at 8pm, the support act is on at 8:45, and we go on stage at 9:45 sharp."),
         near=[P(2.9, B, "Lucas", "soundcheck for saturday is at 6, dont be late this time")]),
    Fact("instrument", "Which instrument is Wen learning at present?",
         P(5.3, B, "Wen", "gave up on the violin, switched to cello. so much nicer to listen to", ("Bram", "wise")),
         original=P(1.2, B, "Wen", "week three of violin lessons, my neighbours hate me"),
         near=[P(2.5, B, "Wen", "my dad played trumpet in a brass band for 30 years")]),
    Fact("commute", "How far is Omar's bike ride to his workplace?",
         P(2.05, C, "Omar", "new job means i cycle 14km each way now, legs are dead", ("Lucas", "calves of steel incoming")),
         near=[P(4.2, C, "Omar", "signed up for the charity ride, 60km in september")]),
    Fact("laptop", "What computer did Greta get for her studies?",
         P(1.5, C, "Greta", "finally bought a thinkpad x1 for uni, second hand but mint", ("Bram", "solid")),
         near=[P(3.2, C, "Greta", "my old macbook finally died, wont even turn on")]),
    Fact("deposit", "How much money did Ines's landlord hold back?",
         P(4.05, C, "Ines",
           "ok rant incoming, sorry. we moved out of the old place three weeks ago, left it cleaner than we found "
           "it, photos of every room, the lot. today the landlord finally replied after ignoring four emails and "
           "out of the 1200 deposit he has kept 400 for a 'stain' on the carpet that was literally there when we "
           "moved in and is in the check-in report. i have sent him the report, the photos and the dates and "
           "told him i will go to the deposit scheme if he doesnt pay it back in 14 days. he also claims the "
           "oven was dirty which is a lie, i spent a whole evening on that oven. anyway if anyone has been through "
           "the dispute thing before please tell me how long it takes",
           ("Greta", "ugh what a snake"), ("Omar", "go to the scheme, they usually side with tenants"),
           span="out of the 1200 deposit he has kept 400 for a 'stain' on the carpet that was literally there when "
                "we moved in and is in the check-in report."),
         near=[P(2.35, C, "Ines", "new landlord wants 1500 upfront as a deposit, robbery")]),
    Fact("holiday", "Where is Bram going on his summer trip now?",
         P(3.9, C, "Bram", "scrapped crete, flights doubled. going to sardinia instead", ("Wen", "sardinia is gorgeous")),
         original=P(0.4, C, "Bram", "crete booked for june!! two weeks of doing nothing"),
         near=[P(2.3, C, "Lucas", "we did crete two years ago, the gorge hike nearly killed me")]),
    Fact("coffee", "Where does Lucas recommend for good coffee?",
         P(1.8, C, "Lucas", "only decent espresso in this town is kaffebar nord on mill street, fight me",
           ("Omar", "its good but 4 euro")),
         near=[P(4.4, C, "Lucas", "the bakery on mill street does amazing croissants tho")],
         asked=[P(0.95, C, "Greta", "where do you get a proper coffee round here? the office stuff is mud")]),
    Fact("iron", "What supplement was Omar prescribed?",
         P(3.05, C, "Omar", "doc put me on iron tablets, my ferritin was super low, explains the tiredness",
           ("Ines", "take them with orange juice")),
         near=[P(1.4, C, "Omar", "my mum swears by vitamin d in winter, makes me take it too")]),
]
HELD_LONGS = [
    P(1.45, C, "Greta",
      "uni just sent this, lol: 'Students are reminded that the examination period begins on the first Monday of "
      "next month. You must bring your student card to every examination; without it you will not be admitted. "
      "Mobile phones and smart watches must be switched off and left in your bag at the front of the hall. "
      "Only clear pencil cases are permitted. If you arrive more than thirty minutes after the start you will "
      "not be allowed to enter. Students requiring adjustments should contact the disability office no later "
      "than two weeks before their first paper. Results will be released through the student portal and not "
      "by email or phone.'", ("Ines", "clear pencil cases is so specific")),
    P(3.25, B, "Bram",
      "setlist draft for saturday, shout if you hate it: open with the fast one so people come to the front, then "
      "the two new ones back to back while everyone is still fresh, then the slow one with just wen and the "
      "keys, then the cover because it always gets people singing, then the long jam thing if the room is "
      "into it and skip it if not, then the single, and end on the loud one with the big ending. no encore "
      "unless they actually ask for one, we always milk it and it's embarrassing. we have about 55 minutes so "
      "if soundcheck runs late we drop the jam. tuning between songs has to be quick this time, last gig we "
      "lost five minutes to it", ("Lucas", "love it"), ("Wen", "no encore agreed")),
]
HELD_TOPICAL = [
    [(0, "anyone riding saturday morning? thinking the river loop"), (1, "if its not raining"), (0, "its always raining")],
    [(0, "chain snapped on the way home, walked the last 3k"), (1, "oof"), (2, "time for a new one")],
    [(0, "who has the spare key to the unit"), (1, "kai i think"), (0, "kai is in spain"), (1, "ah")],
    [(0, "new strings on the bass, sounds like a different instrument"), (1, "told you")],
    [(0, "exam tomorrow, send good vibes"), (1, "youll smash it"), (2, "good luck!!")],
    [(0, "bbq still on if the weather holds?"), (1, "forecast says sun"), (0, "forecast lies")],
    [(0, "my kid has decided he only eats beige food now"), (1, "phase"), (2, "mine lasted 4 years lol")],
    [(0, "the tram strike is on again thursday"), (1, "bike it is"), (2, "working from home it is")],
    [(0, "anyone got a spare xlr cable"), (1, "i have like 6"), (0, "bring 2 thurs pls")],
    [(0, "landlady fixed the shower in one day, im in shock"), (1, "keep her forever")],
    [(0, "library is packed, not a seat anywhere"), (1, "try the top floor"), (0, "full too")],
    [(0, "pedal fell off mid ride lmao"), (1, "how"), (0, "no idea, just fell off")],
    [(0, "demo mix is up on the drive, headphones pls not laptop speakers"), (1, "listening now"),
     (1, "the guitar is too loud in the chorus"), (2, "agree")],
    [(0, "someone left milk in the unit fridge for two weeks"), (1, "not me"), (2, "definitely not me"), (0, "sure")],
]

GENERIC = [
    [(0, "lunch?"), (1, "already ate sorry"), (0, "traitor")],
    [(0, "its so cold today"), (1, "its june!!"), (0, "dont remind me")],
    [(0, "coffee machine is broken again"), (1, "nooo"), (2, "this is a crisis")],
    [(0, "anyone watching anything good"), (1, "rewatching the office for the 5th time"), (0, "respect")],
    [(0, "what are we doing friday"), (1, "sleeping"), (2, "same"), (0, "wild bunch")],
    [(0, "my phone screen cracked, third time this year"), (1, "case?"), (0, "i had one, it was off for 5 min")],
    [(0, "did anyone see that sunset yesterday"), (1, "missed it, was inside"), (0, "it was pink")],
    [(0, "going to try making bread this weekend"), (1, "sourdough era"), (0, "just normal bread, im not a hero")],
    [(0, "anyone know how to get red wine out of a white shirt"), (1, "white wine apparently"),
     (2, "or salt"), (0, "i have neither")],
    [(0, "brb meeting"), (1, "good luck")],
    [(0, "its friday!!"), (1, "its thursday"), (0, "dont")],
    [(0, "took the long way home, needed the walk"), (1, "nice evening for it")],
    [(0, "my neighbour is drilling again"), (1, "at 8am??"), (0, "every day")],
    [(0, "whats everyone reading"), (1, "nothing, phone ate my brain"), (2, "a crime thing, its fine"),
     (0, "relatable")],
    [(0, "power cut on our street for an hour"), (1, "candles and vibes")],
    [(0, "who wants to split a takeaway later"), (1, "me"), (2, "depends what"), (0, "the usual"), (2, "then me")],
    [(0, "slept 10 hours and still tired"), (1, "thats called being an adult")],
    [(0, "lost my keys for 20 mins, they were in my hand"), (1, "classic"), (0, "im not well")],
    [(0, "the post office queue was out the door"), (1, "every time")],
    [(0, "trying to drink less coffee this week"), (1, "how is it going"), (0, "its tuesday and ive had 4")],
    [(0, "new phone who dis"), (1, "lol"), (2, "finally upgraded?"), (0, "yep, the old one was held together by tape")],
    [(0, "anyone good at spreadsheets? mine is broken"), (1, "define broken"), (0, "everything says #REF")],
    [(0, "rain rain rain"), (1, "i forgot my umbrella obviously")],
    [(0, "early night for me, knackered"), (1, "night!"), (2, "sleep well")],
    [(0, "that email was so passive aggressive"), (1, "per my last email"), (0, "EXACTLY that")],
    [(0, "what time is it even"), (1, "half 4"), (0, "how")],
    [(0, "groceries are so expensive now"), (1, "a block of cheese costs a kidney"), (0, "lol")],
    [(0, "anyone else's laptop decide to update right before a call"), (1, "every single time")],
    [(0, "going for a run, if i dont come back tell my story"), (1, "godspeed")],
    [(0, "cant believe its already the weekend again"), (1, "best news all week")],
    [(0, "anyone else get that weird text about a parcel"), (1, "scam, delete it"), (0, "already clicked it lol"),
     (2, "change your passwords then")],
    [(0, "my plant is dying and i dont know why"), (1, "too much water probably"), (0, "i never water it"),
     (1, "ah well there you go")],
    [(0, "just saw a guy walking a cat on a lead"), (1, "iconic")],
    [(0, "fire alarm test went on for 20 minutes"), (1, "my ears"), (2, "was that a test??")],
    [(0, "why is every song on the radio from 2009"), (1, "because 2009 was peak")],
    [(0, "bought a new kettle, life changing"), (1, "its a kettle"), (0, "its a GOOD kettle")],
    [(0, "who ate the last of the biscuits in the tin"), (1, "wasnt me"), (2, "define last")],
    [(0, "back from the shops, forgot the one thing i went for"), (1, "every time"), (0, "milk. it was milk.")],
    [(0, "anyone know if the big tesco is open late today"), (1, "till 10 i think"), (0, "ta")],
    [(0, "im so behind on emails its not funny"), (1, "declare email bankruptcy"), (0, "tempting")],
    [(0, "saw the worst parking job of my life just now"), (1, "pics"), (0, "didnt get one, too stunned")],
    [(0, "think im coming down with something"), (1, "honey and lemon"), (2, "and bed"), (0, "yes mum")],
    [(0, "the printer at work just ate my whole report"), (1, "printers are evil"), (0, "confirmed")],
    [(0, "long day. very long day."), (1, "want to talk about it"), (0, "nah just need food"), (1, "valid")],
    [(0, "guess who forgot their lunch again"), (1, "you"), (0, "me")],
    [(0, "anyone doing anything for the bank holiday"), (1, "sleep"), (2, "sleep but outdoors"), (0, "camping?"),
     (2, "garden")],
    [(0, "is there a word for being tired but not sleepy"), (1, "monday"), (0, "lol true")],
    [(0, "just realised ive had my jumper on inside out all day"), (1, "nobody noticed so it doesnt count")],
    [(0, "what are people having for dinner, need ideas"), (1, "pasta"), (2, "also pasta"), (0, "pasta it is")],
    [(0, "sorry been quiet, crazy week"), (1, "no worries"), (2, "welcome back")],
]
MORNING = ["morning!", "mornin", "morning all", "gm", "morning :)", "morning, coffee first", "good morning everyone",
           "moring", "morning morning"]
LATER = ["hey hey", "hi all", "yo", "hiya", "heyy", "evening folks", "afternoon all", "hello hello", "hey, catching up"]
GREETINGS = MORNING + LATER
ACKS = ["ok", "lol", "sure", "haha", "yeah", "ya", "k", "nice", "same", "+1", "ty", "thanks!", "lmao", "true", "fair",
        "ok cool", "yep", "nope", "hmm", "ha", "oh no", "damn", "wow", "noted", "kk", "agreed", "omg", "cool cool",
        "back", "haha yes", "ikr", "oh nice", "yikes", "mood", "sounds good", "ok ok", "right", "lolol", "oof", "np"]
PLAN_ASK = ["anyone up for {act} {when}?", "{act} {when}, who's in", "fancy {act} {when}?", "thinking {act} {when}, anyone?"]
ACTS = ["a walk", "the cinema", "a pint", "brunch", "a swim", "board games", "the market", "a curry", "karaoke",
        "a picnic", "the climbing wall", "a film night", "bowling", "the car boot sale"]
WHENS = ["tonight", "tomorrow", "this weekend", "sat", "sunday arvo", "after work", "later", "next week sometime"]
PLAN_REPLY = ["im in", "cant {when2}, {excuse}", "maybe, ill see how i feel", "depends on the weather", "yes pls",
              "go on then", "not this time, {excuse}", "count me in", "ugh {excuse}, next time", "what time",
              "where tho", "if im done by then", "oh go on", "would love to but {excuse}", "i could be persuaded",
              "ill bring snacks", "same place as last time?", "sorry {excuse}", "yesss", "who else is coming",
              "i'll let you know later", "maybe for an hour"]
EXCUSES = ["babysitting", "got a work thing", "im broke till payday", "my back is killing me", "visiting family",
           "deadline", "ive got the plumber round", "car is being weird", "too tired honestly", "already got plans"]
WHEN2 = ["tonight", "this week", "then", "that day"]
ACK_KINDS = set(ACKS)


def typo(text: str, rng: random.Random) -> str:
    """Real chat's slips: a dropped or doubled letter, two letters swapped, an apostrophe left out."""
    words = text.split(" ")
    long = [i for i, w in enumerate(words) if len(w) > 4 and w.isalpha()]
    if not long:
        return text
    i = rng.choice(long)
    w = words[i]
    j = rng.randrange(1, len(w) - 1)
    slips = {"drop": w[:j] + w[j + 1 :], "swap": w[:j] + w[j + 1] + w[j] + w[j + 2 :], "double": w[:j] + w[j] + w[j:]}
    words[i] = slips[rng.choice(sorted(slips))]
    return " ".join(words).replace("'", "") if rng.random() < 0.5 else " ".join(words)


def kind_of(text: str) -> str:
    if text.lower().strip() in ACK_KINDS:
        return "ack"
    if text.lower().strip() in (g.lower() for g in GREETINGS):
        return "greeting"
    return "question" if text.rstrip().endswith("?") else "chatter"


def filler_blocks(part: Part, topical: list[list[tuple[int, str]]], rng: random.Random) -> list[tuple[float, str, list[tuple[str, str, str]]]]:
    """The chatter: each day's greetings, then exchanges and plans at random times, acks after them."""
    blocks: list[tuple[float, str, list[tuple[str, str, str]]]] = []
    for day in range(part.days):
        hello = rng.sample(part.people, rng.randint(2, 4))
        blocks.append((day + 0.01, part.channels[0], [(who, g, "greeting") for who, g in
                                                      zip(hello, rng.sample(MORNING, len(hello)), strict=True)]))
    for _ in range(4 * part.days):  # someone drops in later in the day
        blocks.append((rng.uniform(0.3, part.days - 0.05), rng.choice(part.channels),
                       [(rng.choice(part.people), rng.choice(LATER), "greeting")]))
    exchanges = [*topical]
    for _ in range(120):
        ask = rng.choice(PLAN_ASK).format(act=rng.choice(ACTS), when=rng.choice(WHENS))
        replies = [reply.format(when2=rng.choice(WHEN2), excuse=rng.choice(EXCUSES))
                   for reply in rng.sample(PLAN_REPLY, rng.randint(1, 3))]
        exchanges.append([(0, ask), *((n + 1, r) for n, r in enumerate(replies))])
    plans = exchanges[len(topical):]  # the templates fill what the written exchanges leave
    for exchange in exchanges[: len(topical)] + plans:
        people = rng.sample(part.people, 4)
        lines = []
        for slot, text in exchange:
            text = text if rng.random() > 0.25 else typo(text, rng)
            lines.append((people[slot], text, kind_of(text)))
        if rng.random() < 0.6:
            ack = rng.choice(ACKS)
            lines.append((rng.choice(part.people), ack, "ack"))
        channel = part.channels[0] if rng.random() < 0.65 else part.channels[1]
        blocks.append((rng.uniform(0.05, part.days - 0.02), channel, lines))
    return blocks


def placed_block(p: Placed, kind: str) -> tuple[float, str, list[tuple[str, str, str]]]:
    head = [(p.who, p.text, kind)]
    return p.at, p.channel, head + [(who, text, kind_of(text)) for who, text in p.then]


def build(name: str, part: Part, seed: int) -> dict:
    rng = random.Random(seed)
    blocks = []  # (at, channel, lines, roles of the block's first line)
    for fact in part.facts:
        roles = [("answer", fact.answer, "fact")]
        roles += [("original", fact.original, "original")] if fact.original else []
        roles += [("near", p, "near_miss") for p in fact.near] + [("asked", p, "asked") for p in fact.asked]
        for role, p, kind in roles:
            at, channel, lines = placed_block(p, kind)
            blocks.append((at, channel, lines, (role, fact.key), p.span))
    for p in part.longs:
        at, channel, lines = placed_block(p, "long")
        blocks.append((at, channel, lines, None, None))
    topical = part.topical + rng.sample(GENERIC, len(GENERIC) // 2) if name == "tune" else part.topical + GENERIC[len(GENERIC) // 2 :]
    fillers = filler_blocks(part, topical, rng)
    fact_lines = sum(len(b[2]) for b in blocks)
    budget = TARGET_LINES - fact_lines
    kept = []
    for at, channel, lines in fillers:
        if sum(len(b[2]) for b in kept) + len(lines) > budget and lines[0][2] != "greeting":
            continue
        kept.append((at, channel, lines, None, None))
    blocks += kept
    blocks.sort(key=lambda b: b[0])
    start = datetime.fromisoformat(part.start)
    out_lines, roles = [], {}
    last = start
    for at, channel, lines, role, span in blocks:
        day = int(at)
        when = max(start + timedelta(days=day) + DAY_START + DAY_SPAN * (at - day), last + timedelta(seconds=20))
        for n, (who, text, kind) in enumerate(lines):
            if n:
                when += timedelta(seconds=rng.randint(15, 200))
            line = {"id": f"{'t' if name == 'tune' else 'h'}{len(out_lines) + 1:03d}", "speaker": who,
                    "channel": channel, "time": when.isoformat(timespec="seconds"), "text": text, "kind": kind}
            if n == 0 and role:
                roles.setdefault(role, []).append(line["id"])
                if span:
                    line["span"] = span
            out_lines.append(line)
        last = when
    questions = []
    for n, fact in enumerate(part.facts):
        questions.append({"id": f"{name}-{n + 1:02d}", "key": fact.key, "text": fact.question,
                          "answer": roles[("answer", fact.key)], "original": roles.get(("original", fact.key), []),
                          "near_misses": roles.get(("near", fact.key), []), "asked": roles.get(("asked", fact.key), [])})
    return {"people": part.people, "channels": part.channels, "names": part.names, "lines": out_lines,
            "questions": questions}


PARTS = {
    "tune": Part(["Maya", "Theo", "Priya", "Dan", "Keiko"], [G, R], "2025-03-03", 6,
                 ["Maya", "Theo", "Priya", "Dan", "Keiko", "Biscuit", "Storm", "Mochi", "Porto", "Lisbon", "Portugal",
                  "Leeds", "Sheffield", "York", "Ironworks", "Pulse", "Yaris", "Golf", "Volvo", "Manchester",
                  "Greenfield", "Montreal", "Canada", "Berlin", "Bluefern42", "Greggs"],
                 TUNE_FACTS, TUNE_LONGS, TUNE_TOPICAL),
    "held_out": Part(["Lucas", "Ines", "Omar", "Greta", "Wen", "Bram"], [C, B], "2025-06-09", 6,
                     ["Lucas", "Ines", "Omar", "Greta", "Wen", "Bram", "Kai", "Pixel", "Luna", "Noodle", "Tallinn",
                      "Riga", "Ghent", "Antwerp", "Bruges", "Belgium", "Crete", "Sardinia", "Vietnam", "Thinkpad",
                      "Macbook", "Kaffebar", "Granary", "Fox"],
                     HELD_FACTS, HELD_LONGS, HELD_TOPICAL),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    data = {name: build(name, part, seed) for seed, (name, part) in enumerate(PARTS.items())}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    for name, part in data.items():
        print(f"{name}: {len(part['lines'])} lines, {len(part['questions'])} questions, "
              f"{sum(1 for q in part['questions'] if q['original'])} revisions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
