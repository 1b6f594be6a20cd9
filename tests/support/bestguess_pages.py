"""A recipe page and two redesigns the built-in healer refuses: one ambiguous (it stages a best guess), one where the data is gone."""

from __future__ import annotations

RECIPE_BP = {"every": "1h", "fields": {"title": {"css": "div.recipe h1.recipe-title"},
                                       "first": {"css": "ul.ingredients li"},
                                       "second": {"css": "ul.ingredients li:nth-child(2)"}}}


BEFORE = ('<html><body><nav><a href="/">Home</a></nav><div class="recipe"><h1 class="recipe-title">Kettle Soup</h1>'
          '<p class="intro">A warming soup.</p><ul class="ingredients"><li>2 carrots</li><li>1 onion</li>'
          '<li>1 l stock</li></ul></div></body></html>')


# The title now in two alike places the record cannot tell apart: the healer refuses, but has a best guess.
AMBIGUOUS = ('<html><body><nav><a href="/">Home</a></nav><main><div class="c1"><h1 class="t1">Kettle Soup</h1></div>'
             '<div class="c2"><h1 class="t2">Kettle Soup</h1></div><p>A warming soup.</p>'
             '<ul class="list"><li>2 carrots</li><li>1 onion</li><li>1 l stock</li></ul></main></body></html>')


# The ingredients are gone: a refusal for data gone, never a guess.
GONE = ('<html><body><nav><a href="/">Home</a></nav><main><div class="c1"><h1 class="t1">Kettle Soup</h1></div>'
        '<div class="c2"><h1 class="t2">Kettle Soup</h1></div><p>A warming soup.</p></main></body></html>')
