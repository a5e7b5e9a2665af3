% logicpipe kb add/retract: judge candidate facts against a loaded KB, with SWI-Prolog reading them
% (the KB's operators apply) and writing them back (portray_clause), and say where in which file each
% goes or stands. One JSON request on stdin, one JSON reply on stdout after "@@report ":
%
%   request  {"mode": "add" | "remove", "facts": ["text", ...]}
%   reply    {"errors": [load errors], "clauses": how many the KB has, "facts": [{text, status, reason, fact, predicate, module, file,
%             after, ranges}, ...]}
%
% status: new (add: not in the KB yet), present (in the KB), missing (remove: not in the KB), refused.
% add:    `after` is the character offset where the predicate's last clause in `file` ends.
% remove: `ranges` are the [start, end) character offsets of each clause that is this fact.
%
% Usage: swipl -q -g kb_facts:main -t 'halt(1)' facts.pl -- FILE...

:- module(kb_facts, []).

:- use_module(check).
:- use_module(library(http/json)).
:- use_module(library(lists)).
:- use_module(library(apply)).

main :-
    current_prolog_flag(argv, Files),
    load_kb(Files),
    load_errors(Errors),
    aggregate_all(count, ( kb_predicate(M, H), kb_clause(M:H, _, _, _) ), Clauses),
    set_stream(user_input, encoding(utf8)),
    json_read_dict(user_input, Request, [value_string_as(string)]),
    atom_string(Mode, Request.mode),
    foldl(judge(Mode), Request.facts, Judged, []-[], _),
    set_stream(user_output, encoding(utf8)),
    format(user_output, "~n@@report ", []),
    json_write_dict(user_output, _{errors: Errors, clauses: Clauses, facts: Judged}, [width(0)]),
    nl(user_output),
    halt(0).

% judge(+Mode, +Text, -Dict, +Seen0-Sources0, -Seen-Sources): Seen holds the facts judged so far, so a
% repeat within one request is `present`; Sources caches each file's terms and positions.
judge(Mode, Text, Dict, Seen0-Sources0, Seen-Sources) :-
    Base = _{text: Text, reason: "", fact: "", predicate: "", module: "", file: "", after: 0, ranges: []},
    (   catch(one_term(Text, Term), Error, true),
        (   nonvar(Error)
        ->  message_to_string(Error, Why), Status = refused, Seen = Seen0, Sources = Sources0, Extra = _{}
        ;   classify(Mode, Term, Seen0, Status, Why, Extra, Sources0, Sources),
            Seen = [Term|Seen0]
        )
    ->  true
    ;   Status = refused, Why = "could not be judged", Extra = _{}, Seen = Seen0, Sources = Sources0
    ),
    atom_string(Status, StatusText),
    Dict = Base.put(Extra).put(_{status: StatusText, reason: Why}).

% one_term(+Text, -Term): the one fact Text holds; a second one is an error, not dropped silently.
one_term(Text0, Term) :-
    split_string(Text0, "", " \t\r\n", [Trimmed]),
    ( sub_string(Trimmed, _, 1, 0, ".") -> Text = Trimmed ; string_concat(Trimmed, " .", Text) ),
    setup_call_cleanup(open_string(Text, In),
                       ( read_term(In, Term, [module(kb), variable_names(_), syntax_errors(error)]),
                         read_term(In, Next, [module(kb), syntax_errors(error)]) ),
                       close(In)),
    (   Term == end_of_file -> throw(error(syntax_error(no_fact), _))
    ;   Next == end_of_file -> true
    ;   throw(error(syntax_error('one fact per --fact, and this text holds more than one'), _))
    ).

message_to_string(error(syntax_error(What), _), Text) :- !,
    format(string(Text), "syntax error: ~w", [What]).
message_to_string(Error, Text) :-
    message_to_codes(Error, Codes), !, string_codes(Text, Codes).
message_to_string(Error, Text) :-
    format(string(Text), "~q", [Error]).

message_to_codes(Error, Codes) :-
    catch(( '$messages':translate_message(Error, Lines, []),
            with_output_to(codes(Codes), print_message_lines(current_output, '', Lines)) ), _, fail).

classify(_, Term, _, refused, "not a fact", _{}, S, S) :- \+ callable(Term), !.
classify(_, Term, _, refused, "a rule, not a fact", _{}, S, S) :-
    ( Term = (_ :- _) ; Term = (_ --> _) ), !.
classify(_, Term, _, refused, "not a single fact", _{}, S, S) :-
    functor(Term, N, A), memberchk(N/A, [(',')/2, (;)/2, (->)/2, (\+)/1, (:-)/1, (?-)/1, (:)/2]), !.
classify(_, Term, _, refused, "a fact must not contain variables", _{}, S, S) :- \+ ground(Term), !.
classify(Mode, Term, Seen, Status, Why, Extra, S0, S) :-
    functor(Term, N, A),
    format(string(PI), "~q/~w", [N, A]),
    (   kb_predicate(M, Term)
    ->  portray(Term, Fact),
        Extra0 = _{fact: Fact, predicate: PI, module: M},
        judge_known(Mode, M, Term, Seen, Status, Why, Extra1, S0, S),
        Extra = Extra0.put(Extra1)
    ;   format(string(Why), "~w is not a predicate of the KB", [PI]),
        Status = refused, Extra = _{predicate: PI}, S = S0
    ).

judge_known(_, M, Term, _, refused, Why, _{}, S, S) :-
    functor(Term, N, A), functor(H, N, A),
    once(( kb_clause(M:H, Body, _, _), Body \== true )), !,
    indicator(M, Term, PI),
    format(string(Why), "~w is defined by rules; add facts to the predicates it is derived from", [PI]).
judge_known(add, M, Term, _, refused, Why, _{}, S, S) :-
    functor(Term, N, A), functor(H, N, A),
    \+ kb_clause(M:H, true, _, _), !,
    indicator(M, Term, PI),
    format(string(Why), "~w has no facts to compare a new one with (a percept is set with --percept)", [PI]).
judge_known(add, _, Term, Seen, present, "already in this request", _{}, S, S) :-
    memberchk(Term, Seen), !.
judge_known(add, M, Term, _, present, "already in the KB", _{file: File}, S, S) :-
    clause_is(M, Term, File), !.
judge_known(add, M, Term, _, refused, Why, _{}, S, S) :-
    type_mismatch(M, Term, Why), !.
judge_known(add, M, Term, _, new, "", _{file: File, after: After}, S0, S) :-
    last_clause_end(M, Term, File, After, S0, S).
judge_known(remove, _, Term, Seen, present, "already in this request", _{}, S, S) :-
    memberchk(Term, Seen), !.
judge_known(remove, M, Term, _, Status, Why, _{file: File, ranges: Ranges}, S0, S) :-
    clause_is(M, Term, File), !,
    source_terms(File, Terms, S0, S),
    findall([From, To], ( member(t(T, From, To), Terms), T == Term ), Ranges),
    (   Ranges == []  % made by a directive or term expansion: there is no clause text to take out
    ->  Status = refused, format(string(Why), "in the KB, but not written as a clause in ~w", [File])
    ;   Status = present, Why = ""
    ).
judge_known(remove, _, _, _, missing, "not in the KB", _{}, S, S).

% Term is a fact of the KB, in File (Term is ground: a fact whose head is == to it, not one that
% merely unifies with it, like p(_)).
clause_is(M, Term, File) :-
    functor(Term, N, A), functor(H, N, A),
    kb_clause(M:H, true, File, _), H == Term, !.

portray(Term, Text) :-
    with_output_to(string(Out), portray_clause(Term)),
    split_string(Out, "", "\n ", [Text]).

% --- argument types ----------------------------------------------------------------------------

% An argument whose type no fact of the predicate has at that position, where its facts agree on
% the types there: "lots" where every mark is a number.
type_mismatch(M, Term, Why) :-
    functor(Term, N, A),
    functor(H, N, A),
    findall(H, kb_clause(M:H, true, _, _), Facts),
    Facts \== [],
    between(1, A, I),
    arg(I, Term, Value),
    type_of(Value, Type),
    findall(T, ( member(F, Facts), arg(I, F, V), type_of(V, T) ), Ts0),
    sort(Ts0, Ts),
    \+ memberchk(Type, Ts), !,
    indicator(M, Term, PI),
    maplist(a_type, Ts, Named),
    atomic_list_concat(Named, ' or ', Seen),
    a_type(Type, This),
    format(string(Why), "argument ~w of ~w is ~w (~q), but every fact of ~w has ~w there",
           [I, PI, This, Value, PI, Seen]).

a_type(Type, Text) :-
    ( sub_atom(Type, 0, 1, _, First), memberchk(First, [a, e, i, o, u]) -> A = an ; A = a ),
    format(atom(Text), "~w ~w", [A, Type]).

type_of(V, number) :- number(V), !.
type_of(V, string) :- string(V), !.
type_of(V, list) :- ( V == [] ; V = [_|_] ), !.
type_of(V, atom) :- atom(V), !.
type_of(V, Type) :- compound(V), !, compound_name_arity(V, N, A), format(atom(Type), "~q/~w term", [N, A]).
type_of(_, other).

% --- where clauses stand in the source --------------------------------------------------------

last_clause_end(M, Term, File, After, S0, S) :-
    functor(Term, N, A), functor(H, N, A),
    findall(F-L, kb_clause(M:H, _, F, L), Places),
    last(Places, File-_),
    source_terms(File, Terms, S0, S),
    findall(To, ( member(t(T, _, To), Terms), clause_head(T, Head), functor(Head, N, A) ), Ends),
    ( last(Ends, After) -> true ; size_file(File, After) ).

clause_head((Head :- _), Head) :- !.
clause_head(Head, Head).

% The terms of a KB file with their [From, To) character offsets, read once per file.
source_terms(File, Terms, S0, S) :-
    (   memberchk(File-Terms, S0)
    ->  S = S0
    ;   read_source(File, Terms), S = [File-Terms|S0]
    ).

read_source(File, Terms) :-
    ( module_property(Module, file(File)) -> true ; Module = kb ),
    setup_call_cleanup(open(File, read, In, [encoding(utf8)]),
                       read_terms(In, Module, Terms),
                       close(In)).

read_terms(In, Module, Terms) :-
    character_count(In, Before),
    (   catch(read_term(In, T, [module(Module), subterm_positions(P), syntax_errors(quiet)]), _, fail)
    ->  (   T == end_of_file
        ->  Terms = []
        ;   arg(1, P, From), arg(2, P, To),
            Terms = [t(T, From, To)|Rest],
            read_terms(In, Module, Rest)
        )
    ;   character_count(In, After),  % a term that does not read was consumed: go on after it
        ( After > Before -> read_terms(In, Module, Terms) ; Terms = [] )
    ).
